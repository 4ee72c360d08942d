//! The calls added to the header after 8fe93c1: TF_CONFIG's resolver fields (rpc_layer,
//! environment, master), compressed TFRecord files, the partial batch split, and the job
//! token of servers and communication options. Each has a test and a misuse test; the
//! expectations are computed here (the TFRecord framing, CRCs and zlib/gzip containers are
//! written by hand, the replica split from the header's rule).

use std::ffi::CStr;

use distribute::*;
use distribute_tests::*;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The library's message of the last failed call on this thread (for raw `sys` calls).
fn raw_message() -> String {
    unsafe { CStr::from_ptr(sys::dist_last_error_message()) }.to_string_lossy().into_owned()
}

// ---- TF_CONFIG's resolver fields ----

#[test]
fn cluster_resolver_fields() {
    let (rpc, env, addr) = ("grpc+verbs", "google", "10.1.0.7:7001");
    let json = format!(
        r#"{{"environment": "{}", "cluster": {{"chief": ["10.1.0.5:7000"], "worker": ["10.1.0.6:7000", "{}"],
            "ps": ["10.1.0.8:7002"]}}, "task": {{"type": "worker", "index": 1}}, "rpc_layer": "{}"}}"#,
        env, addr, rpc
    );
    let c = Cluster::from_tf_config(&json).unwrap();
    assert_eq!(c.rpc_layer().unwrap(), rpc);
    assert_eq!(c.environment().unwrap(), env);
    assert_eq!(c.master().unwrap(), format!("{}://{}", rpc, addr));
    // The strings are copies: they outlive the cluster.
    let (r, m) = (c.rpc_layer().unwrap(), c.master().unwrap());
    drop(c);
    assert_eq!((r.as_str(), m.as_str()), (rpc, "grpc+verbs://10.1.0.7:7001"));

    // No rpc_layer: the bare address; no environment: "".
    let c = Cluster::from_tf_config(
        r#"{"cluster": {"worker": ["h0:5000", "h1:5001", "h2:5002"]}, "task": {"type": "worker", "index": 2}}"#,
    )
    .unwrap();
    assert_eq!(c.rpc_layer().unwrap(), "");
    assert_eq!(c.environment().unwrap(), "");
    assert_eq!(c.master().unwrap(), "h2:5002");

    // A cluster built by hand has neither field; its master follows the current task.
    let mut c = Cluster::new().unwrap();
    assert_eq!((c.rpc_layer().unwrap(), c.environment().unwrap()), (String::new(), String::new()));
    c.add_task("chief", 0, "c0:6000").unwrap();
    c.add_task("worker", 0, "w0:6001").unwrap();
    c.set_task("worker", 0).unwrap();
    assert_eq!(c.master().unwrap(), "w0:6001");
    c.set_task("chief", 0).unwrap();
    assert_eq!(c.master().unwrap(), "c0:6000");
}

#[test]
fn cluster_resolver_fields_misuse() {
    // Fields that are not strings are refused at parse time, naming the key.
    for key in ["rpc_layer", "environment"] {
        let json = format!(
            r#"{{"cluster": {{"worker": ["a:1", "b:2"]}}, "task": {{"type": "worker", "index": 0}}, "{}": 7}}"#,
            key
        );
        let e = Cluster::from_tf_config(&json).unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
        assert!(e.message().contains(key), "{}", e);
    }
    // A single task, or no current task: master is "" (as TF), not an error.
    let single = Cluster::from_tf_config(
        r#"{"cluster": {"worker": ["solo:9"]}, "task": {"type": "worker", "index": 0}, "rpc_layer": "grpc"}"#,
    )
    .unwrap();
    assert_eq!(single.master().unwrap(), "");
    assert_eq!(single.rpc_layer().unwrap(), "grpc");
    let mut no_task = Cluster::new().unwrap();
    no_task.add_task("worker", 0, "a:1").unwrap();
    no_task.add_task("worker", 1, "b:1").unwrap();
    assert_eq!(no_task.master().unwrap(), "");
    // NULL arguments reach the library's check through the raw ABI.
    let mut p = std::ptr::null();
    assert_eq!(unsafe { sys::dist_cluster_master(std::ptr::null(), &mut p) }, sys::DIST_INVALID_ARGUMENT);
    assert_eq!(
        unsafe { sys::dist_cluster_environment(single.as_ptr(), std::ptr::null_mut()) },
        sys::DIST_INVALID_ARGUMENT
    );
    assert!(raw_message().contains("dist_cluster_environment"), "{}", raw_message());
}

// ---- Compressed TFRecord files, written by hand ----

fn crc_table(poly: u32) -> [u32; 256] {
    let mut t = [0u32; 256];
    for (i, e) in t.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ poly } else { c >> 1 };
        }
        *e = c;
    }
    t
}

fn crc(poly: u32, data: &[u8]) -> u32 {
    let t = crc_table(poly);
    !data.iter().fold(!0u32, |c, &b| t[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8))
}
fn crc32c(data: &[u8]) -> u32 {
    crc(0x82F6_3B78, data)
}
fn crc32(data: &[u8]) -> u32 {
    crc(0xEDB8_8320, data)
}
fn masked(c: u32) -> u32 {
    ((c >> 15) | (c << 17)).wrapping_add(0xa282_ead8)
}

/// TFRecord framing: length, masked CRC-32C of the length, data, masked CRC-32C of the data.
fn tfrecords(records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        let len = (r.len() as u64).to_le_bytes();
        out.extend_from_slice(&len);
        out.extend_from_slice(&masked(crc32c(&len)).to_le_bytes());
        out.extend_from_slice(r);
        out.extend_from_slice(&masked(crc32c(r)).to_le_bytes());
    }
    out
}

/// Raw deflate (RFC 1951) of `data` as stored blocks of at most `block` bytes.
fn deflate_stored(data: &[u8], block: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let chunks: Vec<&[u8]> = if data.is_empty() { vec![&[][..]] } else { data.chunks(block).collect() };
    for (i, c) in chunks.iter().enumerate() {
        out.push(if i + 1 == chunks.len() { 1 } else { 0 }); // BFINAL, BTYPE 00
        out.extend_from_slice(&(c.len() as u16).to_le_bytes());
        out.extend_from_slice(&(!(c.len() as u16)).to_le_bytes());
        out.extend_from_slice(c);
    }
    out
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + x as u32) % 65521;
        b = (b + a) % 65521;
    }
    let mut out = vec![0x78, 0x01]; // (0x78 * 256 + 0x01) % 31 == 0
    out.extend(deflate_stored(data, 1000));
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
    out
}

fn gzip_member(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.extend(deflate_stored(data, 700));
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

fn sample_records() -> Vec<Vec<u8>> {
    vec![
        b"alpha".to_vec(),
        Vec::new(),
        "\u{3b3}-bytes".as_bytes().to_vec(),
        (0..2500u32).map(|i| (i * 7 % 251) as u8).collect(),
    ]
}

fn read_all(ds: &Dataset) -> Result<Vec<Vec<u8>>> {
    let mut it = ds.make_iterator()?;
    let mut out = Vec::new();
    while let Some(el) = it.next_element(1)? {
        out.push(el[0].to_vec::<u8>()?);
    }
    Ok(out)
}

struct TempDir(std::path::PathBuf);
impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("distribute-rust-{}-{}", tag, std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    fn write(&self, name: &str, bytes: &[u8]) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn compressed_tfrecord_files() {
    setup();
    // The CRCs against their published check values.
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    let dir = TempDir::new("tfrecord");
    let records = sample_records();
    let plain = tfrecords(&records);
    let (first, second) = records.split_at(2);
    let p = dir.write("plain.tfrecord", &plain);
    let z = dir.write("z.tfrecord", &zlib(&plain));
    // Two gzip members concatenated, split between records.
    let mut gz = gzip_member(&tfrecords(first));
    gz.extend(gzip_member(&tfrecords(second)));
    let g = dir.write("g.tfrecord.gz", &gz);

    assert_eq!(
        read_all(&Dataset::from_compressed_tfrecord_files(&[p.as_str()], Compression::None).unwrap()).unwrap(),
        records
    );
    assert_eq!(
        read_all(&Dataset::from_compressed_tfrecord_files(&[z.as_str()], Compression::Zlib).unwrap()).unwrap(),
        records
    );
    assert_eq!(
        read_all(&Dataset::from_compressed_tfrecord_files(&[g.as_str()], Compression::Gzip).unwrap()).unwrap(),
        records
    );
    // Several files are read in order.
    let mut twice = records.clone();
    twice.extend(records.iter().cloned());
    let both_gzip = dir.write("g2.tfrecord.gz", &gzip_member(&plain));
    assert_eq!(
        read_all(
            &Dataset::from_compressed_tfrecord_files(&[g.as_str(), both_gzip.as_str()], Compression::Gzip).unwrap()
        )
        .unwrap(),
        twice
    );
    assert_eq!(Dataset::from_compressed_tfrecord_files(&[], Compression::Gzip).unwrap().num_components().unwrap(), 1);
    for c in [Compression::None, Compression::Zlib, Compression::Gzip] {
        assert_eq!(Compression::from_raw(c.raw()), Some(c));
    }
    assert_eq!(
        (Compression::None.raw(), Compression::Zlib.raw(), Compression::Gzip.raw()),
        (sys::DIST_COMPRESSION_NONE, sys::DIST_COMPRESSION_ZLIB, sys::DIST_COMPRESSION_GZIP)
    );
}

#[test]
fn compressed_tfrecord_files_misuse() {
    setup();
    let dir = TempDir::new("tfrecord-misuse");
    let plain = tfrecords(&sample_records());
    let g = dir.write("g.gz", &gzip_member(&plain));
    let z = dir.write("z.zlib", &zlib(&plain));
    // An uncompressed reader given compressed files says which compression they look like.
    for (path, name) in [(&g, "GZIP"), (&z, "ZLIB")] {
        let e = read_all(&Dataset::from_compressed_tfrecord_files(&[path.as_str()], Compression::None).unwrap())
            .unwrap_err();
        assert!(e.message().contains(name), "{}", e);
        let e = read_all(&Dataset::from_tfrecord_files(&[path.as_str()]).unwrap()).unwrap_err();
        assert!(e.message().contains(name), "{}", e);
    }
    // A truncated gzip file: DATA_LOSS naming the file.
    let full = gzip_member(&plain);
    let cut = dir.write("cut.gz", &full[..full.len() / 2]);
    let e =
        read_all(&Dataset::from_compressed_tfrecord_files(&[cut.as_str()], Compression::Gzip).unwrap()).unwrap_err();
    assert_eq!(e.code(), Code::DataLoss, "{}", e);
    assert!(e.message().contains("cut.gz"), "{}", e);
    // A gzip member with a wrong CRC-32: DATA_LOSS too.
    let mut bad = full.clone();
    let n = bad.len();
    bad[n - 8] ^= 0xff;
    let bad = dir.write("badcrc.gz", &bad);
    let e =
        read_all(&Dataset::from_compressed_tfrecord_files(&[bad.as_str()], Compression::Gzip).unwrap()).unwrap_err();
    assert_eq!(e.code(), Code::DataLoss, "{}", e);
    // A path with a NUL byte is refused by the binding, before the library.
    let e = Dataset::from_compressed_tfrecord_files(&["a\0b"], Compression::Zlib).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(!e.is_from_library());
    // An unknown compression cannot be written in Rust; the library refuses it through the
    // raw ABI, and from_raw knows no such value.
    assert_eq!(Compression::from_raw(3), None);
    let path = std::ffi::CString::new(g.as_str()).unwrap();
    let paths = [path.as_ptr()];
    let mut out = std::ptr::null_mut();
    let st = unsafe { sys::dist_dataset_from_compressed_tfrecord_files(paths.as_ptr(), 1, 3, &mut out) };
    assert_eq!(st, sys::DIST_INVALID_ARGUMENT, "{}", raw_message());
    assert!(out.is_null());
}

// ---- The partial batch split ----

/// The header's rule: replicas take `per` rows each, in order.
fn split(rows: &[f32], replicas: usize, per: usize) -> Vec<Vec<f32>> {
    (0..replicas).map(|r| rows.iter().skip(r * per).take(per).cloned().collect()).collect()
}

fn ceil_div(a: usize, b: usize) -> usize {
    (a + b - 1) / b
}

/// The replicas' rows of every step of range(n).batch(global) over `replicas`.
fn steps(s: &Strategy, replicas: usize, n: usize, global: i64, opts: Option<&InputOptions>) -> Vec<Vec<Vec<f32>>> {
    let v: Vec<f32> = (0..n).map(|x| x as f32).collect();
    let t = Value::from_slice(&v, &[n as i64], None).unwrap();
    let ds = Dataset::from_tensor_slices(&[&t]).unwrap().batch(global, false).unwrap();
    let mut it = s.distribute_dataset(&ds, opts).unwrap().make_iterator().unwrap();
    let mut out = Vec::new();
    while let Some(el) = it.next_element(1).unwrap() {
        out.push((0..replicas as i32).map(|r| component_f32(&el[0], r)).collect());
    }
    out
}

fn expected_steps(replicas: usize, n: usize, global: usize, even: bool) -> Vec<Vec<Vec<f32>>> {
    let v: Vec<f32> = (0..n).map(|x| x as f32).collect();
    v.chunks(global)
        .map(|b| {
            let per = if even && b.len() < global { ceil_div(b.len(), replicas) } else { ceil_div(global, replicas) };
            split(b, replicas, per)
        })
        .collect()
}

#[test]
fn partial_batch_split() {
    let s = mirrored(4);
    // range(10).batch(8) over 4 replicas: a last batch of 2 rows.
    let in_order = expected_steps(4, 10, 8, false);
    let even = expected_steps(4, 10, 8, true);
    assert_eq!(in_order[1], vec![vec![8.0, 9.0], vec![], vec![], vec![]]);
    assert_eq!(even[1], vec![vec![8.0], vec![9.0], vec![], vec![]]);
    assert_eq!(steps(&s, 4, 10, 8, None), in_order);
    let mut o = InputOptions::new().unwrap();
    o.set_partial_batch_split(PartialBatchSplit::Even).unwrap();
    assert_eq!(steps(&s, 4, 10, 8, Some(&o)), even);
    // range(14).batch(8): a last batch of 6 rows, 2 + 2 + 2 + 0 in order and evenly alike.
    assert_eq!(steps(&s, 4, 14, 8, Some(&o)), expected_steps(4, 14, 8, true));
    o.set_partial_batch_split(PartialBatchSplit::InOrder).unwrap();
    assert_eq!(steps(&s, 4, 10, 8, Some(&o)), in_order);
    // Full batches split the same either way.
    o.set_partial_batch_split(PartialBatchSplit::Even).unwrap();
    assert_eq!(steps(&s, 4, 16, 8, Some(&o)), expected_steps(4, 16, 8, false));
}

#[test]
fn partial_batch_split_misuse() {
    let s = mirrored(2);
    assert_eq!(PartialBatchSplit::from_raw(2), None);
    assert_eq!(PartialBatchSplit::from_raw(sys::DIST_PARTIAL_BATCH_EVEN), Some(PartialBatchSplit::Even));
    let mut o = InputOptions::new().unwrap();
    o.set_partial_batch_split(PartialBatchSplit::Even).unwrap();
    // An unknown value (only reachable through the raw ABI) is refused and changes nothing.
    let st = unsafe { sys::dist_input_options_set_partial_batch_split(o.as_ptr(), 2) };
    assert_eq!(st, sys::DIST_INVALID_ARGUMENT);
    assert!(raw_message().contains("dist_input_options_set_partial_batch_split"), "{}", raw_message());
    // range(10).batch(4) over 2 replicas still ends evenly: [8] and [9].
    let got = steps(&s, 2, 10, 4, Some(&o));
    assert_eq!(got, expected_steps(2, 10, 4, true));
    assert_eq!(got[2], vec![vec![8.0], vec![9.0]]);
    // A null options pointer is refused.
    assert_eq!(
        unsafe { sys::dist_input_options_set_partial_batch_split(std::ptr::null_mut(), 0) },
        sys::DIST_INVALID_ARGUMENT
    );
}

// ---- Job tokens ----

const TOKEN: &str = "rust-binding-secret-0123456789";

fn loopback_workers(ports: &[u16], task: i32) -> Cluster {
    let mut c = Cluster::new().unwrap();
    for (i, p) in ports.iter().enumerate() {
        c.add_task("worker", i as i32, &format!("127.0.0.1:{}", p)).unwrap();
    }
    c.set_task("worker", task).unwrap();
    c
}

fn server_options(token: Option<&str>) -> ServerOptions {
    let mut o = ServerOptions::new().unwrap();
    o.set_startup_timeout_ms(TIMEOUT_MS).unwrap();
    o.set_job_token(token).unwrap();
    o
}

#[test]
fn server_job_token() {
    let mut o = ServerOptions::new().unwrap();
    // 16 to 1024 printable characters without spaces.
    o.set_job_token(Some(&"k".repeat(16))).unwrap();
    o.set_job_token(Some(&"~".repeat(1024))).unwrap();
    o.set_job_token(None).unwrap();
    o.set_job_token(Some("")).unwrap();
    o.set_allow_unauthenticated(true).unwrap();
    o.set_allow_unauthenticated(false).unwrap();

    // A chief with the token admits a worker with the same one.
    let ports = [free_port(), free_port()];
    let chief = Server::new(&loopback_workers(&ports, 0), Some(&server_options(Some(TOKEN)))).unwrap();
    assert_eq!(chief.port().unwrap(), ports[0] as i32);
    let worker = Server::new(&loopback_workers(&ports, 1), Some(&server_options(Some(TOKEN)))).unwrap();
    worker.key_value_set("shared", b"token ok").unwrap();
    assert_eq!(chief.key_value_get("shared", TIMEOUT_MS).unwrap().to_vec::<u8>().unwrap(), b"token ok");
    drop(worker);
    drop(chief);
}

#[test]
fn server_job_token_misuse() {
    let mut o = ServerOptions::new().unwrap();
    for bad in
        ["k".repeat(15), "~".repeat(1025), "has a space 0123456789".to_string(), "tab\there-0123456789".to_string()]
    {
        let e = o.set_job_token(Some(&bad)).unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{:?}: {}", bad, e);
        assert!(e.is_from_library());
    }
    let e = o.set_job_token(Some("nul\0inside-0123456789")).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(!e.is_from_library());
    // allow is 0 or 1: bool cannot say 2, the raw ABI can.
    assert_eq!(
        unsafe { sys::dist_server_options_set_allow_unauthenticated(o.as_ptr(), 2) },
        sys::DIST_INVALID_ARGUMENT
    );

    // A worker with another token (or none) is refused by the chief; a bad token left the
    // chief's options unchanged.
    let ports = [free_port(), free_port()];
    let mut chief_options = server_options(Some(TOKEN));
    assert!(chief_options.set_job_token(Some("short")).is_err());
    let chief = Server::new(&loopback_workers(&ports, 0), Some(&chief_options)).unwrap();
    let e = Server::new(&loopback_workers(&ports, 1), Some(&server_options(Some("another-secret-0123456789"))))
        .err()
        .expect("a wrong token must be refused");
    assert_eq!(e.code(), Code::Unauthenticated, "{}", e);
    let worker = Server::new(&loopback_workers(&ports, 1), Some(&server_options(Some(TOKEN)))).unwrap();
    worker.peer_health().unwrap();
    drop(worker);
    drop(chief);
}

#[test]
fn communication_options_job_token() {
    setup();
    let mut o = CommunicationOptions::new().unwrap();
    o.set_job_token(None).unwrap();
    o.set_job_token(Some("")).unwrap();
    o.set_job_token(Some(TOKEN)).unwrap();
    o.set_replicas_per_worker(2).unwrap();
    o.set_timeout_ms(TIMEOUT_MS).unwrap();
    // One worker whose server carries the token runs its collectives.
    let c = loopback_workers(&[free_port()], 0);
    let s = Strategy::multi_worker_mirrored(Some(&c), Some(&o)).unwrap();
    let out = s
        .run(&[], 1, |ctx, _| {
            let v = Value::scalar(10.0f32 * (ctx.replica_id()? as f32 + 1.0), Some(&ctx.device()?))?;
            Ok(vec![ctx.all_reduce(ReduceOp::Sum, &v)?])
        })
        .unwrap();
    assert_eq!(s.reduce(ReduceOp::Mean, out[0].as_ref().unwrap()).unwrap().scalar_f32().unwrap(), 30.0);
}

#[test]
fn communication_options_job_token_misuse() {
    let mut o = CommunicationOptions::new().unwrap();
    let e = o.set_job_token(Some("0123456789abcde")).unwrap_err(); // 15 characters
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    assert!(e.message().contains("15"), "{}", e);
    let e = o.set_job_token(Some("two words 0123456789")).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    let e = o.set_job_token(Some("\0")).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(!e.is_from_library());
    assert_eq!(
        unsafe { sys::dist_communication_options_set_job_token(std::ptr::null_mut(), std::ptr::null()) },
        sys::DIST_INVALID_ARGUMENT
    );
}

//! TLS through the safe crate: `ServerOptions::set_tls_files` and
//! `CommunicationOptions::set_tls_files`, with certificates made for this run by
//! tests/common/make_tls_certs.sh (openssl). A chief and a worker over mutual TLS exchange
//! a value; a plaintext worker cannot join; bad files are named at creation; refused
//! setters change nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use distribute::*;
use distribute_tests::*;

const TOKEN: &str = "the-job-secret-0123456789";

/// A fresh directory of test certificates, removed when dropped.
struct Certificates(PathBuf);

impl Certificates {
    fn new(name: &str) -> Certificates {
        let dir = std::env::temp_dir().join(format!("dist_rust_tls_{}_{}", std::process::id(), name));
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../common/make_tls_certs.sh");
        let status = Command::new(script).arg(&dir).status().expect("make_tls_certs.sh");
        assert!(status.success(), "make_tls_certs.sh failed");
        Certificates(dir)
    }
    fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Certificates {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Two distinct free loopback ports (both held while chosen).
fn two_free_ports() -> [u16; 2] {
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    [a.local_addr().unwrap().port(), b.local_addr().unwrap().port()]
}

fn workers(ports: &[u16], task: i32) -> Cluster {
    let mut c = Cluster::new().unwrap();
    for (i, p) in ports.iter().enumerate() {
        c.add_task("worker", i as i32, &format!("127.0.0.1:{}", p)).unwrap();
    }
    c.set_task("worker", task).unwrap();
    c
}

fn options(cert: Option<&str>, key: Option<&str>, ca: Option<&str>) -> ServerOptions {
    let mut o = ServerOptions::new().unwrap();
    o.set_startup_timeout_ms(1500).unwrap();
    o.set_job_token(Some(TOKEN)).unwrap();
    o.set_tls_files(cert, key, ca).unwrap();
    o
}

#[test]
fn chief_and_worker_over_mutual_tls() {
    let certs = Certificates::new("job");
    let (cert, key, ca) = (certs.file("node.pem"), certs.file("node.key"), certs.file("ca.pem"));
    let ports = two_free_ports();
    let mut job = options(Some(&cert), Some(&key), Some(&ca));
    let chief = Server::new(&workers(&ports, 0), Some(&job)).unwrap();
    // A refused setter leaves the job's files in place.
    let e = job.set_tls_files(None, None, Some(&ca)).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    let plaintext = options(None, None, None);
    let e = Server::new(&workers(&ports, 1), Some(&plaintext)).err().expect("a plaintext worker must be refused");
    assert_eq!(e.code(), Code::Unavailable, "{}", e);
    assert!(e.to_string().contains("chief task worker:0"), "{}", e);
    let worker = Server::new(&workers(&ports, 1), Some(&job)).unwrap();
    worker.key_value_set("k", b"over tls").unwrap();
    assert_eq!(chief.key_value_get("k", TIMEOUT_MS).unwrap().to_vec::<u8>().unwrap(), b"over tls");
    drop(worker);
    drop(chief);
}

#[test]
fn bad_files_are_named_at_creation() {
    let certs = Certificates::new("bad");
    let ports = two_free_ports();
    let missing = options(Some(&certs.file("missing.pem")), Some(&certs.file("node.key")), None);
    let e = Server::new(&workers(&ports[..1], 0), Some(&missing)).err().expect("a missing file");
    assert_eq!(e.code(), Code::NotFound, "{}", e);
    assert!(e.to_string().contains("missing.pem"), "{}", e);
    let garbage = options(Some(&certs.file("garbage.pem")), Some(&certs.file("node.key")), Some(""));
    let e = Server::new(&workers(&ports[..1], 0), Some(&garbage)).err().expect("a garbage certificate");
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    assert!(e.to_string().contains("garbage.pem' holds no PEM certificate"), "{}", e);

    // The strategy reads the files at creation.
    setup();
    let mut co = CommunicationOptions::new().unwrap();
    co.set_timeout_ms(TIMEOUT_MS).unwrap();
    co.set_tls_files(Some(&certs.file("node.pem")), Some(&certs.file("missing.key")), None).unwrap();
    let one = workers(&ports[1..], 0);
    let e = Strategy::multi_worker_mirrored(Some(&one), Some(&co)).err().expect("a missing key");
    assert_eq!(e.code(), Code::NotFound, "{}", e);
    assert!(e.to_string().contains("missing.key"), "{}", e);
    co.set_tls_files(Some(&certs.file("node.pem")), Some(&certs.file("node.key")), Some(&certs.file("ca.pem")))
        .unwrap();
    let strategy = Strategy::multi_worker_mirrored(Some(&one), Some(&co)).unwrap();
    assert_eq!(strategy.kind().unwrap(), StrategyKind::MultiWorkerMirrored);
}

#[test]
fn set_tls_files_misuse() {
    let mut o = ServerOptions::new().unwrap();
    let mut co = CommunicationOptions::new().unwrap();
    o.set_tls_files(Some("a.pem"), Some("a.key"), Some("ca.pem")).unwrap();
    o.set_tls_files(None, None, None).unwrap();
    co.set_tls_files(Some("a.pem"), Some("a.key"), None).unwrap();
    co.set_tls_files(Some(""), Some(""), Some("")).unwrap();
    let e = o.set_tls_files(Some("a.pem"), None, None).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.to_string().contains("dist_server_options_set_tls_files: cert_path is set but key_path is not"), "{}", e);
    let e = co.set_tls_files(None, None, Some("ca.pem")).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.to_string().contains("dist_communication_options_set_tls_files: ca_path is set"), "{}", e);
    // A NUL inside a path is refused by the crate before the library sees it.
    let e = o.set_tls_files(Some("a\0.pem"), Some("a.key"), None).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(!e.is_from_library());
    // NULL options through the raw ABI.
    let cert = std::ffi::CString::new("a.pem").unwrap();
    assert_eq!(
        unsafe {
            sys::dist_server_options_set_tls_files(std::ptr::null_mut(), cert.as_ptr(), cert.as_ptr(), std::ptr::null())
        },
        sys::DIST_INVALID_ARGUMENT
    );
    assert_eq!(
        unsafe {
            sys::dist_communication_options_set_tls_files(
                std::ptr::null_mut(),
                cert.as_ptr(),
                cert.as_ptr(),
                std::ptr::null(),
            )
        },
        sys::DIST_INVALID_ARGUMENT
    );
}

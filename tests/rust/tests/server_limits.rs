//! ServerOptions::set_limit / limit (dist_server_options_set_limit / get_limit): every
//! ServerLimit is its DIST_SERVER_LIMIT_* constant, the defaults and ranges server.h
//! documents, refusals that name the bound and change nothing, unknown limits, and a limit
//! that takes effect in a running server.

use distribute::*;
use distribute_tests::*;

const DAY_MS: i64 = 86_400_000;
const INT32_MAX: i64 = i32::MAX as i64;

/// The bounds whose defaults do not depend on the machine's memory, with their field name,
/// documented default and range (server.h), written out here.
const ROWS: [(ServerLimit, &str, i64, i64, i64); 13] = [
    (ServerLimit::MaxConnections, "max_connections", 0, 0, 1 << 20),
    (ServerLimit::MaxConnectionsPerPeer, "max_connections_per_peer", 0, 0, 1 << 20),
    (ServerLimit::MaxStreamsPerConnection, "max_streams_per_connection", 128, 1, INT32_MAX),
    (ServerLimit::ConnectionIdleTimeoutMs, "connection_idle_timeout_ms", 120_000, 1, DAY_MS),
    (ServerLimit::HandshakeTimeoutMs, "handshake_timeout_ms", 10_000, 1, DAY_MS),
    (ServerLimit::StreamIdleTimeoutMs, "stream_idle_timeout_ms", 10_000, 1, DAY_MS),
    (ServerLimit::MaxMessageBytes, "max_message_bytes", 4 << 20, 10240, INT32_MAX),
    (ServerLimit::MaxStoreBytes, "max_store_bytes", 64 << 20, 1, i64::MAX),
    (ServerLimit::MaxStoreKeys, "max_store_keys", 65536, 1, i64::MAX),
    (ServerLimit::MaxBarriers, "max_barriers", 16384, 1, i64::MAX),
    (ServerLimit::MaxPendingWaits, "max_pending_waits", 0, 0, 65536),
    (ServerLimit::MaxVariables, "max_variables", 1 << 20, 1, 1 << 22),
    (ServerLimit::MaxVariableRequestBytes, "max_variable_request_bytes", 1 << 30, 1, i64::MAX),
];

fn assert_invalid(e: Error, needle: &str) {
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
    assert!(e.message().contains(needle), "{:?} does not mention {:?}", e.message(), needle);
}

#[test]
fn every_limit_is_its_c_constant() {
    let all = [
        ServerLimit::MaxConnections,
        ServerLimit::MaxConnectionsPerPeer,
        ServerLimit::MaxStreamsPerConnection,
        ServerLimit::ConnectionIdleTimeoutMs,
        ServerLimit::HandshakeTimeoutMs,
        ServerLimit::StreamIdleTimeoutMs,
        ServerLimit::MaxMessageBytes,
        ServerLimit::MaxStoreBytes,
        ServerLimit::MaxStoreKeys,
        ServerLimit::MaxBarriers,
        ServerLimit::MaxPendingWaits,
        ServerLimit::MaxVariableBytes,
        ServerLimit::MaxVariables,
        ServerLimit::MaxVariableRequestBytes,
        ServerLimit::MaxVariableInflightBytes,
    ];
    // server.h numbers them 1 to 15 in this order.
    for (i, limit) in all.iter().enumerate() {
        assert_eq!(limit.raw(), i as i32 + 1, "{:?}", limit);
        assert_eq!(ServerLimit::from_raw(limit.raw()), Some(*limit));
    }
    assert_eq!(ServerLimit::from_raw(0), None);
    assert_eq!(ServerLimit::from_raw(16), None);
}

#[test]
fn defaults_ranges_and_refusals() {
    let mut o = ServerOptions::new().unwrap();
    for (limit, name, default, min, max) in ROWS {
        assert_eq!(o.limit(limit).unwrap(), default, "{} default", name);
        for v in [min, max] {
            o.set_limit(limit, v).unwrap();
            assert_eq!(o.limit(limit).unwrap(), v, "{}", name);
        }
        // Out of range: INVALID_ARGUMENT naming the bound and the value; the last value stays.
        let e = o.set_limit(limit, min - 1).unwrap_err();
        assert_invalid(e, &format!("{} (limit {}) cannot be {}", name, limit.raw(), min - 1));
        if max < i64::MAX {
            assert_invalid(o.set_limit(limit, max + 1).unwrap_err(), name);
        }
        assert_eq!(o.limit(limit).unwrap(), max, "{}: a refused value changed it", name);
    }
    // The memory-dependent defaults stay within their documented bounds.
    let variable_bytes = o.limit(ServerLimit::MaxVariableBytes).unwrap();
    assert!((1..=16 << 30).contains(&variable_bytes), "max_variable_bytes {}", variable_bytes);
    let inflight = o.limit(ServerLimit::MaxVariableInflightBytes).unwrap();
    assert!((1 << 30..=4 << 30).contains(&inflight), "max_variable_inflight_bytes {}", inflight);
}

#[test]
fn examples_from_the_header() {
    let mut o = ServerOptions::new().unwrap();
    assert_eq!(o.limit(ServerLimit::MaxStreamsPerConnection).unwrap(), 128);
    assert_eq!(o.limit(ServerLimit::HandshakeTimeoutMs).unwrap(), 10000);
    assert_eq!(o.limit(ServerLimit::MaxStoreKeys).unwrap(), 65536);
    o.set_limit(ServerLimit::MaxStreamsPerConnection, 7).unwrap();
    assert_eq!(o.limit(ServerLimit::MaxStreamsPerConnection).unwrap(), 7);
    assert_eq!(o.limit_raw(sys::DIST_SERVER_LIMIT_MAX_STREAMS_PER_CONNECTION).unwrap(), 7);
    o.set_limit_raw(sys::DIST_SERVER_LIMIT_HANDSHAKE_TIMEOUT_MS, 2500).unwrap();
    assert_eq!(o.limit(ServerLimit::HandshakeTimeoutMs).unwrap(), 2500);
    let e = o.set_limit(ServerLimit::MaxStreamsPerConnection, 0).unwrap_err();
    assert_invalid(e, "max_streams_per_connection");
    assert_eq!(o.limit(ServerLimit::MaxStreamsPerConnection).unwrap(), 7);
}

#[test]
fn unknown_limits_are_refused() {
    let mut o = ServerOptions::new().unwrap();
    for limit in [0, 16, -1] {
        let needle = format!("limit is {}", limit);
        assert_invalid(o.set_limit_raw(limit, 5).unwrap_err(), &needle);
        assert_invalid(o.limit_raw(limit).unwrap_err(), &needle);
    }
    let e = o.set_limit_raw(0, 5).unwrap_err();
    assert_invalid(e, "dist_server_options_set_limit: limit is 0: expected one of the DIST_SERVER_LIMIT_* constants");
    assert_invalid(o.limit_raw(16).unwrap_err(), "dist_server_options_get_limit");
}

/// The store's byte cap set through the binding bounds a running chief's store.
#[test]
fn a_limit_takes_effect_in_the_server() {
    setup();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut c = Cluster::new().unwrap();
    c.add_task("worker", 0, &format!("127.0.0.1:{}", port)).unwrap();
    c.set_task("worker", 0).unwrap();
    let mut o = ServerOptions::new().unwrap();
    o.set_startup_timeout_ms(5000).unwrap();
    o.set_limit(ServerLimit::MaxStoreBytes, 100).unwrap();
    let server = Server::new(&c, Some(&o)).unwrap();
    let value = [b'x'; 60];
    server.key_value_set("a", &value).unwrap(); // 1 + 60 bytes
    let e = server.key_value_set("b", &value).unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{}", e);
    assert!(e.message().contains("max_store_bytes"), "{}", e);
}

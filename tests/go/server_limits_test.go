package tests

// ServerOptions.SetLimit / Limit (dist_server_options_set_limit / get_limit): the defaults
// and ranges server.h documents, refusals that name the bound and change nothing, unknown
// limits, and a limit that takes effect in a running server.

import (
	"fmt"
	"math"
	"testing"

	"distribute"
)

// serverLimitRow is a bound with its field name, documented default and range (server.h),
// written out here.
type serverLimitRow struct {
	limit        distribute.ServerLimit
	name         string
	defaultValue int64
	min, max     int64
}

const dayMs = 86400000

// The bounds whose defaults do not depend on the machine's memory.
var serverLimitRows = []serverLimitRow{
	{distribute.ServerLimitMaxConnections, "max_connections", 0, 0, 1 << 20},
	{distribute.ServerLimitMaxConnectionsPerPeer, "max_connections_per_peer", 0, 0, 1 << 20},
	{distribute.ServerLimitMaxStreamsPerConnection, "max_streams_per_connection", 128, 1, math.MaxInt32},
	{distribute.ServerLimitConnectionIdleTimeoutMs, "connection_idle_timeout_ms", 120000, 1, dayMs},
	{distribute.ServerLimitHandshakeTimeoutMs, "handshake_timeout_ms", 10000, 1, dayMs},
	{distribute.ServerLimitStreamIdleTimeoutMs, "stream_idle_timeout_ms", 10000, 1, dayMs},
	{distribute.ServerLimitMaxMessageBytes, "max_message_bytes", 4 << 20, 10240, math.MaxInt32},
	{distribute.ServerLimitMaxStoreBytes, "max_store_bytes", 64 << 20, 1, math.MaxInt64},
	{distribute.ServerLimitMaxStoreKeys, "max_store_keys", 65536, 1, math.MaxInt64},
	{distribute.ServerLimitMaxBarriers, "max_barriers", 16384, 1, math.MaxInt64},
	{distribute.ServerLimitMaxPendingWaits, "max_pending_waits", 0, 0, 65536},
	{distribute.ServerLimitMaxVariables, "max_variables", 1 << 20, 1, 1 << 22},
	{distribute.ServerLimitMaxVariableRequestBytes, "max_variable_request_bytes", 1 << 30, 1, math.MaxInt64},
}

func limitOf(t *testing.T, o *distribute.ServerOptions, limit distribute.ServerLimit) int64 {
	t.Helper()
	v, err := o.Limit(limit)
	ok(t, err)
	return v
}

func TestServerLimitDefaultsRangesAndRefusals(t *testing.T) {
	o, err := distribute.NewServerOptions()
	ok(t, err)
	defer o.Close()
	for _, row := range serverLimitRows {
		if got := limitOf(t, o, row.limit); got != row.defaultValue {
			t.Fatalf("%s: default %d, want %d", row.name, got, row.defaultValue)
		}
		for _, v := range []int64{row.min, row.max} {
			ok(t, o.SetLimit(row.limit, v))
			if got := limitOf(t, o, row.limit); got != v {
				t.Fatalf("%s: set %d, read %d", row.name, v, got)
			}
		}
		// Out of range: INVALID_ARGUMENT naming the bound and the value; the last value stays.
		wantErr(t, o.SetLimit(row.limit, row.min-1), distribute.ErrInvalidArgument,
			fmt.Sprintf("%s (limit %d) cannot be %d", row.name, row.limit, row.min-1))
		if row.max < math.MaxInt64 {
			wantErr(t, o.SetLimit(row.limit, row.max+1), distribute.ErrInvalidArgument, row.name)
		}
		if got := limitOf(t, o, row.limit); got != row.max {
			t.Fatalf("%s: a refused value changed it to %d", row.name, got)
		}
	}
	// The memory-dependent defaults stay within their documented bounds.
	if v := limitOf(t, o, distribute.ServerLimitMaxVariableBytes); v < 1 || v > 16<<30 {
		t.Fatalf("max_variable_bytes default %d", v)
	}
	if v := limitOf(t, o, distribute.ServerLimitMaxVariableInflightBytes); v < 1<<30 || v > 4<<30 {
		t.Fatalf("max_variable_inflight_bytes default %d", v)
	}
}

func TestServerLimitExamples(t *testing.T) {
	o, err := distribute.NewServerOptions()
	ok(t, err)
	defer o.Close()
	for limit, want := range map[distribute.ServerLimit]int64{
		distribute.ServerLimitMaxStreamsPerConnection: 128,
		distribute.ServerLimitHandshakeTimeoutMs:      10000,
		distribute.ServerLimitMaxStoreKeys:            65536,
	} {
		if got := limitOf(t, o, limit); got != want {
			t.Fatalf("limit %d: default %d, want %d", limit, got, want)
		}
	}
	ok(t, o.SetLimit(distribute.ServerLimitMaxStreamsPerConnection, 7))
	if got := limitOf(t, o, distribute.ServerLimitMaxStreamsPerConnection); got != 7 {
		t.Fatalf("max_streams_per_connection: set 7, read %d", got)
	}
	err = o.SetLimit(distribute.ServerLimitMaxStreamsPerConnection, 0)
	wantErr(t, err, distribute.ErrInvalidArgument, "max_streams_per_connection")
	if e := err.(*distribute.Error); e.Code != distribute.CodeInvalidArgument || e.Op != "dist_server_options_set_limit" {
		t.Fatalf("error %#v", e)
	}
	if got := limitOf(t, o, distribute.ServerLimitMaxStreamsPerConnection); got != 7 {
		t.Fatalf("a refused value changed max_streams_per_connection to %d", got)
	}
}

func TestServerLimitUnknown(t *testing.T) {
	o, err := distribute.NewServerOptions()
	ok(t, err)
	defer o.Close()
	for _, limit := range []distribute.ServerLimit{0, 16, -1} {
		want := fmt.Sprintf("limit is %d", limit)
		wantErr(t, o.SetLimit(limit, 5), distribute.ErrInvalidArgument, want)
		v, err := o.Limit(limit)
		wantErr(t, err, distribute.ErrInvalidArgument, want)
		if v != 0 {
			t.Fatalf("limit %d: a failed read gave %d", limit, v)
		}
	}
	wantErr(t, o.SetLimit(0, 5), distribute.ErrInvalidArgument, "limit is 0: expected one of the DIST_SERVER_LIMIT_* constants")
	// A closed (or nil) handle is the library's INVALID_ARGUMENT naming the argument.
	var none *distribute.ServerOptions
	wantErr(t, none.SetLimit(distribute.ServerLimitMaxBarriers, 5), distribute.ErrInvalidArgument, "options")
	_, err = none.Limit(distribute.ServerLimitMaxBarriers)
	wantErr(t, err, distribute.ErrInvalidArgument, "options")
}

// The store's byte cap set through the binding bounds a running chief's store.
func TestServerLimitTakesEffect(t *testing.T) {
	port := distinctFreePorts(t, 1)[0]
	c, err := distribute.NewCluster()
	ok(t, err)
	defer c.Close()
	ok(t, c.AddTask("worker", 0, fmt.Sprintf("127.0.0.1:%d", port)))
	ok(t, c.SetTask("worker", 0))
	o, err := distribute.NewServerOptions()
	ok(t, err)
	defer o.Close()
	ok(t, o.SetStartupTimeoutMs(5000))
	ok(t, o.SetLimit(distribute.ServerLimitMaxStoreBytes, 100))
	s, err := distribute.NewServer(c, o)
	ok(t, err)
	defer s.Close()
	value := make([]byte, 60)
	ok(t, s.KeyValueSet("a", value)) // 1 + 60 bytes
	wantErr(t, s.KeyValueSet("b", value), distribute.ErrResourceExhausted, "max_store_bytes")
}

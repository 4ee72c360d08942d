package tests

// TLS through the binding: ServerOptions.SetTLSFiles and CommunicationOptions.SetTLSFiles,
// with certificates made for this run by tests/common/make_tls_certs.sh (openssl). A chief
// and a worker over mutual TLS exchange a value; a plaintext worker cannot join; bad files
// are named at creation; refused setters change nothing.

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"distribute"
)

// tlsCertificates makes the test certificates in a temporary directory and returns a
// function giving the path of one of them.
func tlsCertificates(t *testing.T) func(string) string {
	t.Helper()
	dir := t.TempDir()
	script, err := filepath.Abs("../common/make_tls_certs.sh")
	ok(t, err)
	if out, err := exec.Command(script, dir).CombinedOutput(); err != nil {
		t.Fatalf("make_tls_certs.sh: %v: %s", err, out)
	}
	return func(name string) string { return filepath.Join(dir, name) }
}

// twoFreePorts are two distinct free loopback ports (both held open while chosen).
func twoFreePorts(t *testing.T) [2]int {
	t.Helper()
	p := distinctFreePorts(t, 2)
	return [2]int{p[0], p[1]}
}

func twoWorkers(t *testing.T, ports [2]int, current int) *distribute.Cluster {
	t.Helper()
	c, err := distribute.NewCluster()
	ok(t, err)
	for i, port := range ports {
		ok(t, c.AddTask("worker", i, fmt.Sprintf("127.0.0.1:%d", port)))
	}
	ok(t, c.SetTask("worker", current))
	return c
}

func tlsServerOptions(t *testing.T, cert, key, ca string) *distribute.ServerOptions {
	t.Helper()
	o, err := distribute.NewServerOptions()
	ok(t, err)
	ok(t, o.SetStartupTimeoutMs(1500))
	ok(t, o.SetJobToken(goodToken))
	ok(t, o.SetTLSFiles(cert, key, ca))
	return o
}

func TestTLSChiefAndWorker(t *testing.T) {
	for _, name := range []string{"DIST_TLS_CERT", "DIST_TLS_KEY", "DIST_TLS_CA"} {
		unsetEnv(t, name)
	}
	file := tlsCertificates(t)
	ports := twoFreePorts(t)
	job := tlsServerOptions(t, file("node.pem"), file("node.key"), file("ca.pem"))
	defer job.Close()
	plaintext := tlsServerOptions(t, "", "", "")
	defer plaintext.Close()
	chiefTask, workerTask := twoWorkers(t, ports, 0), twoWorkers(t, ports, 1)
	defer chiefTask.Close()
	defer workerTask.Close()
	chief, err := distribute.NewServer(chiefTask, job)
	ok(t, err)
	defer chief.Close()
	// A refused setter leaves the job's files in place.
	wantErr(t, job.SetTLSFiles("", "", file("ca.pem")), distribute.ErrInvalidArgument, "ca_path is set")
	_, err = distribute.NewServer(workerTask, plaintext)
	wantErr(t, err, distribute.ErrUnavailable, "chief task worker:0")
	worker, err := distribute.NewServer(workerTask, job)
	ok(t, err)
	defer worker.Close()
	ok(t, worker.KeyValueSet("k", []byte{9, 3}))
	got, err := chief.KeyValueGet("k", 20000)
	ok(t, err)
	if string(got) != string([]byte{9, 3}) {
		t.Fatalf("got %v, want [9 3]", got)
	}
}

func TestTLSBadFilesAndMisuse(t *testing.T) {
	file := tlsCertificates(t)
	ports := twoFreePorts(t)
	chiefTask := twoWorkers(t, ports, 0)
	defer chiefTask.Close()
	missing := tlsServerOptions(t, file("missing.pem"), file("node.key"), "")
	defer missing.Close()
	_, err := distribute.NewServer(chiefTask, missing)
	wantErr(t, err, distribute.ErrNotFound, "missing.pem")
	garbage := tlsServerOptions(t, file("node.pem"), file("garbage.pem"), file("ca.pem"))
	defer garbage.Close()
	_, err = distribute.NewServer(chiefTask, garbage)
	wantErr(t, err, distribute.ErrInvalidArgument, "garbage.pem' holds no PEM private key")

	so, err := distribute.NewServerOptions()
	ok(t, err)
	defer so.Close()
	co, err := distribute.NewCommunicationOptions()
	ok(t, err)
	defer co.Close()
	wantErr(t, so.SetTLSFiles("a.pem", "", ""), distribute.ErrInvalidArgument,
		"dist_server_options_set_tls_files: cert_path is set but key_path is not")
	wantErr(t, co.SetTLSFiles("", "", "ca.pem"), distribute.ErrInvalidArgument,
		"dist_communication_options_set_tls_files: ca_path is set")
	var nilSO *distribute.ServerOptions
	var nilCO *distribute.CommunicationOptions
	wantErr(t, nilSO.SetTLSFiles("a.pem", "a.key", ""), distribute.ErrInvalidArgument, "options")
	wantErr(t, nilCO.SetTLSFiles("a.pem", "a.key", ""), distribute.ErrInvalidArgument, "options")

	// The strategy reads the files at creation.
	ok(t, co.SetTimeoutMs(20000))
	ok(t, co.SetTLSFiles(file("node.pem"), file("missing.key"), ""))
	one, err := distribute.NewCluster()
	ok(t, err)
	defer one.Close()
	ok(t, one.AddTask("worker", 0, fmt.Sprintf("127.0.0.1:%d", ports[1])))
	ok(t, one.SetTask("worker", 0))
	_, err = distribute.NewMultiWorkerMirroredStrategy(one, co)
	wantErr(t, err, distribute.ErrNotFound, "missing.key")
	ok(t, co.SetTLSFiles(file("node.pem"), file("node.key"), file("ca.pem")))
	s, err := distribute.NewMultiWorkerMirroredStrategy(one, co)
	ok(t, err)
	s.Close()
}

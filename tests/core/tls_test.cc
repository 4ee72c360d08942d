// TLS for the servers: the path rules, where the files come from (options or DIST_TLS_*),
// how each bad file is reported (missing, not a file, too large, garbage, encrypted or
// mismatched key), and servers on loopback with certificates made at run time by
// tests/common/make_tls_certs.sh: a job over mutual TLS works, and a plaintext client, a
// client that trusts another CA, one without a certificate or with one from another CA
// are all refused (UNAVAILABLE, within their deadline), while the job token still applies.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "core/server/job_token.h"
#include "core/server/remote_variable_host.h"
#include "core/server/server.h"
#include "core/server/tls_credentials.h"
#include "core/util/bounded_file.h"
#include "core/util/tls_files.h"
#include "gtest/gtest.h"
#include "server/coordination.grpc.pb.h"  // generated
#include "tests/common/free_ports.h"
#include "tests/core/status_test_util.h"
#include "tests/core/worker_cluster.h"

namespace distribute {
namespace {

namespace pb = ::distribute::coordination;
using ::distribute::testing::FreePorts;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::WorkerCluster;
using std::chrono::steady_clock;

const std::string kToken = "0123456789abcdef0123456789abcdef";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

void WriteAll(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary) << contents;
}

// The certificates of make_tls_certs.sh, made once for every test here.
class Certificates : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/dist_tls_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = new std::string(pattern);
    const std::string command = absl::StrCat("'", DIST_MAKE_TLS_CERTS, "' '", *dir_, "'");
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  static void TearDownTestSuite() {
    std::system(absl::StrCat("rm -rf ", *dir_).c_str());
    delete dir_;
  }
  void SetUp() override {
    for (const char* name : {kTlsCertEnvironment, kTlsKeyEnvironment, kTlsCaEnvironment}) unsetenv(name);
  }

  static std::string Path(const std::string& name) { return absl::StrCat(*dir_, "/", name); }
  // The job's own TLS files: node certificate, its key, the job's CA.
  static TlsFiles Job() { return TlsFiles{Path("node.pem"), Path("node.key"), Path("ca.pem")}; }

  static std::string* dir_;
};
std::string* Certificates::dir_ = nullptr;

TEST(TlsFilesTest, PathRules) {
  EXPECT_TRUE(IsOk(ValidateTlsFiles(TlsFiles{}, "c", "k", "a")));
  EXPECT_TRUE(IsOk(ValidateTlsFiles(TlsFiles{"c.pem", "k.pem", ""}, "c", "k", "a")));
  EXPECT_TRUE(IsOk(ValidateTlsFiles(TlsFiles{"c.pem", "k.pem", "a.pem"}, "c", "k", "a")));
  EXPECT_TRUE(HasError(ValidateTlsFiles(TlsFiles{"c.pem", "", ""}, "cert", "key", "ca"),
                       absl::StatusCode::kInvalidArgument, {"cert is set but key is not"}));
  EXPECT_TRUE(HasError(ValidateTlsFiles(TlsFiles{"", "k.pem", "a.pem"}, "cert", "key", "ca"),
                       absl::StatusCode::kInvalidArgument, {"key is set but cert is not"}));
  EXPECT_TRUE(HasError(ValidateTlsFiles(TlsFiles{"", "", "a.pem"}, "cert", "key", "ca"),
                       absl::StatusCode::kInvalidArgument, {"ca is set but cert and key are not"}));
  EXPECT_TRUE(HasError(ValidateTlsFiles(TlsFiles{"c.pem", "k.pem", std::string(4097, 'a')}, "cert", "key", "ca"),
                       absl::StatusCode::kInvalidArgument, {"ca is a path of 4097 bytes", "at most 4096"}));
  EXPECT_TRUE(IsOk(ValidateTlsFiles(TlsFiles{std::string(4096, 'c'), "k", ""}, "cert", "key", "ca")));
}

TEST(BoundedFileTest, ReadsUpToTheBoundAndNoMore) {
  char pattern[] = "/tmp/dist_bounded_file.XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  WriteAll(dir + "/ten", "0123456789");
  EXPECT_EQ(*ReadBoundedFile("f", dir + "/ten", 10), "0123456789");
  EXPECT_TRUE(HasError(ReadBoundedFile("f", dir + "/ten", 9), absl::StatusCode::kInvalidArgument,
                       {"f: cannot use '", "/ten'", "more than 9 bytes"}));
  WriteAll(dir + "/empty", "");
  EXPECT_EQ(*ReadBoundedFile("f", dir + "/empty", 10), "");
  EXPECT_TRUE(HasError(ReadBoundedFile("f", dir + "/missing", 10), absl::StatusCode::kNotFound,
                       {"f: cannot use '", "/missing'", "No such file or directory"}));
  EXPECT_TRUE(HasError(ReadBoundedFile("f", dir + "/ten/below", 10), absl::StatusCode::kNotFound));
  EXPECT_TRUE(HasError(ReadBoundedFile("f", dir, 10), absl::StatusCode::kInvalidArgument,
                       {"not a regular file"}));
  // A FIFO with no writer: refused at once, not waited on.
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_TRUE(HasError(ReadBoundedFile("f", dir + "/fifo", 10), absl::StatusCode::kInvalidArgument,
                       {"not a regular file"}));
  std::system(absl::StrCat("rm -rf ", dir).c_str());
}

TEST_F(Certificates, ResolvedFromTheOptionsElseTheEnvironment) {
  EXPECT_EQ(*ResolveTlsFiles(TlsFiles{}), TlsFiles{});
  EXPECT_FALSE(LoadTlsCredentials(TlsFiles{})->has_value());  // TLS off

  ASSERT_EQ(setenv(kTlsCertEnvironment, "env-cert.pem", 1), 0);
  EXPECT_TRUE(HasError(ResolveTlsFiles(TlsFiles{}), absl::StatusCode::kInvalidArgument,
                       {"DIST_TLS_CERT is set but DIST_TLS_KEY is not"}));
  ASSERT_EQ(setenv(kTlsKeyEnvironment, "env-key.pem", 1), 0);
  ASSERT_EQ(setenv(kTlsCaEnvironment, "env-ca.pem", 1), 0);
  EXPECT_EQ(*ResolveTlsFiles(TlsFiles{}), (TlsFiles{"env-cert.pem", "env-key.pem", "env-ca.pem"}));
  EXPECT_EQ(*ResolveTlsFiles(Job()), Job());  // the options win
  EXPECT_TRUE(HasError(LoadTlsCredentials(TlsFiles{}), absl::StatusCode::kNotFound,
                       {"DIST_TLS_CERT: cannot use 'env-cert.pem'"}));

  ASSERT_EQ(unsetenv(kTlsCertEnvironment), 0);
  ASSERT_EQ(unsetenv(kTlsKeyEnvironment), 0);
  EXPECT_TRUE(HasError(ResolveTlsFiles(TlsFiles{}), absl::StatusCode::kInvalidArgument,
                       {"DIST_TLS_CA is set but DIST_TLS_CERT and DIST_TLS_KEY are not"}));
  ASSERT_EQ(setenv(kTlsCertEnvironment, Path("node.pem").c_str(), 1), 0);
  ASSERT_EQ(setenv(kTlsKeyEnvironment, Path("node.key").c_str(), 1), 0);
  ASSERT_EQ(setenv(kTlsCaEnvironment, Path("ca.pem").c_str(), 1), 0);
  absl::StatusOr<std::optional<TlsCredentials>> from_environment = LoadTlsCredentials(TlsFiles{});
  ASSERT_TRUE(IsOk(from_environment));
  ASSERT_TRUE(from_environment->has_value());
  EXPECT_EQ((*from_environment)->cert_chain, ReadAll(Path("node.pem")));
  EXPECT_EQ((*from_environment)->private_key, ReadAll(Path("node.key")));
  EXPECT_EQ((*from_environment)->ca_certs, ReadAll(Path("ca.pem")));
}

TEST_F(Certificates, EachBadFileIsNamed) {
  absl::StatusOr<std::optional<TlsCredentials>> good = LoadTlsCredentials(Job());
  ASSERT_TRUE(IsOk(good));
  ASSERT_TRUE(good->has_value());
  absl::StatusOr<std::optional<TlsCredentials>> without_ca =
      LoadTlsCredentials(TlsFiles{Path("node.pem"), Path("node.key"), ""});
  ASSERT_TRUE(IsOk(without_ca));
  EXPECT_EQ((*without_ca)->ca_certs, "");

  const auto with = [](TlsFiles files, std::string TlsFiles::*which, const std::string& path) {
    files.*which = path;
    return LoadTlsCredentials(files);
  };
  EXPECT_TRUE(HasError(with(Job(), &TlsFiles::cert_path, Path("missing.pem")), absl::StatusCode::kNotFound,
                       {"cert_path: cannot use '", "missing.pem'", "No such file"}));
  EXPECT_TRUE(HasError(with(Job(), &TlsFiles::key_path, Path("missing.key")), absl::StatusCode::kNotFound,
                       {"key_path: cannot use '", "missing.key'"}));
  EXPECT_TRUE(HasError(with(Job(), &TlsFiles::ca_path, Path("missing-ca.pem")), absl::StatusCode::kNotFound,
                       {"ca_path: cannot use '", "missing-ca.pem'"}));
  EXPECT_TRUE(HasError(with(Job(), &TlsFiles::ca_path, *dir_), absl::StatusCode::kInvalidArgument,
                       {"ca_path: cannot use '", "not a regular file"}));

  // Larger than 1 MiB, even when it starts as a valid certificate.
  WriteAll(Path("huge.pem"), ReadAll(Path("node.pem")) + std::string(kMaxTlsFileBytes, '\n'));
  EXPECT_TRUE(HasError(with(Job(), &TlsFiles::cert_path, Path("huge.pem")), absl::StatusCode::kInvalidArgument,
                       {"cert_path: cannot use '", "huge.pem'", "more than 1048576 bytes"}));

  EXPECT_TRUE(HasError(with(Job(), &TlsFiles::cert_path, Path("garbage.pem")), absl::StatusCode::kInvalidArgument,
                       {"cert_path '", "garbage.pem' holds no PEM certificate"}));
  EXPECT_TRUE(HasError(with(Job(), &TlsFiles::ca_path, Path("garbage.pem")), absl::StatusCode::kInvalidArgument,
                       {"ca_path '", "garbage.pem' holds no PEM certificate"}));
  // A key where the certificate belongs holds no certificate either.
  EXPECT_TRUE(HasError(with(Job(), &TlsFiles::cert_path, Path("node.key")), absl::StatusCode::kInvalidArgument,
                       {"node.key' holds no PEM certificate"}));
  EXPECT_TRUE(HasError(with(Job(), &TlsFiles::key_path, Path("garbage.pem")), absl::StatusCode::kInvalidArgument,
                       {"key_path '", "garbage.pem' holds no PEM private key"}));
  EXPECT_TRUE(HasError(with(Job(), &TlsFiles::key_path, Path("node_encrypted.key")),
                       absl::StatusCode::kInvalidArgument,
                       {"node_encrypted.key' holds an encrypted private key", "unencrypted"}));
  EXPECT_TRUE(HasError(with(Job(), &TlsFiles::key_path, Path("other_node.key")), absl::StatusCode::kInvalidArgument,
                       {"other_node.key' holds a private key that does not belong to the certificate of cert_path",
                        "node.pem'"}));

  // A chain whose second certificate is damaged.
  std::string damaged = ReadAll(Path("ca.pem"));
  damaged.replace(damaged.find("MII") + 10, 8, "!!!!!!!!");
  WriteAll(Path("chain.pem"), ReadAll(Path("node.pem")) + damaged);
  EXPECT_TRUE(HasError(with(Job(), &TlsFiles::cert_path, Path("chain.pem")), absl::StatusCode::kInvalidArgument,
                       {"chain.pem': certificate 2 does not parse"}));
}

class TlsServerTest : public Certificates {
 protected:
  static Server::Options Options(const TlsFiles& tls) {
    Server::Options options;
    options.job_token = kToken;
    options.tls = tls;
    options.startup_timeout_ms = 2000;
    return options;
  }

  // GetTask on `port` from a client of our own: plaintext without `tls`, else TLS with
  // the given certificates ("" for none); with the job token unless `token` is false.
  static grpc::Status GetTask(int port, const std::optional<grpc::SslCredentialsOptions>& tls, bool token = true) {
    auto credentials = tls ? grpc::SslCredentials(*tls) : grpc::InsecureChannelCredentials();
    auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), credentials);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (token) context.AddMetadata(kJobTokenMetadataKey, kToken);
    pb::GetTaskResponse response;
    return pb::TaskService::NewStub(channel)->GetTask(&context, pb::GetTaskRequest(), &response);
  }

  static grpc::SslCredentialsOptions Client(const std::string& ca, const std::string& cert, const std::string& key) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ReadAll(Path(ca));
    if (!cert.empty()) options.pem_cert_chain = ReadAll(Path(cert));
    if (!key.empty()) options.pem_private_key = ReadAll(Path(key));
    return options;
  }
};

TEST_F(TlsServerTest, AJobOverMutualTlsWorks) {
  const std::vector<int> ports = FreePorts(2);
  absl::StatusOr<std::unique_ptr<Server>> chief = Server::Start(WorkerCluster(ports, 0), Options(Job()));
  ASSERT_TRUE(IsOk(chief));
  absl::StatusOr<std::unique_ptr<Server>> worker = Server::Start(WorkerCluster(ports, 1), Options(Job()));
  ASSERT_TRUE(IsOk(worker));
  ASSERT_TRUE(IsOk((*worker)->coordination().Set("from/worker", "over tls")));
  EXPECT_EQ(*(*chief)->coordination().Get("from/worker", Deadline::AfterMs(30'000)), "over tls");
  std::thread other([&] { EXPECT_TRUE(IsOk((*worker)->coordination().Barrier("b", Deadline::AfterMs(30'000)))); });
  EXPECT_TRUE(IsOk((*chief)->coordination().Barrier("b", Deadline::AfterMs(30'000))));
  other.join();
  EXPECT_TRUE(IsOk((*chief)->coordination().PeerHealth()));
  EXPECT_TRUE(IsOk((*worker)->coordination().PeerHealth()));
}

// A ps task's variable service over mutual TLS: a worker's host with the job's files
// creates and reads; one without TLS is refused by the handshake, which it reports as the
// task being unavailable, within its deadline.
TEST_F(TlsServerTest, AVariableHostReachesAPsTaskOverMutualTls) {
  const std::vector<int> ports = FreePorts(2);
  const std::string ps_address = absl::StrCat("127.0.0.1:", ports[1]);
  const auto cluster = [&](const char* job) {
    ClusterSpec spec;
    EXPECT_TRUE(IsOk(spec.AddTask("worker", 0, absl::StrCat("127.0.0.1:", ports[0]))));
    EXPECT_TRUE(IsOk(spec.AddTask("ps", 0, ps_address)));
    EXPECT_TRUE(IsOk(spec.SetTask(job, 0)));
    return spec;
  };
  absl::StatusOr<std::unique_ptr<Server>> chief = Server::Start(cluster("worker"), Options(Job()));
  ASSERT_TRUE(IsOk(chief));
  absl::StatusOr<std::unique_ptr<Server>> ps = Server::Start(cluster("ps"), Options(Job()));
  ASSERT_TRUE(IsOk(ps));

  RemoteVariableHostOptions options;
  options.job_token = kToken;
  options.tls = Job();
  absl::StatusOr<std::unique_ptr<ps::VariableHost>> host = NewRemoteVariableHost("ps:0", ps_address, options);
  ASSERT_TRUE(IsOk(host));
  ASSERT_TRUE(IsOk((*host)->WaitReady(Deadline::AfterMs(30'000))));
  const int32_t seven = 7;
  const int64_t dims[] = {1};
  absl::StatusOr<Tensor> value = Tensor::Create(
      Tensor::Description{static_cast<int32_t>(DType::kInt32), dims, sizeof(seven), "CPU:0"}, &seven);
  ASSERT_TRUE(IsOk(value));
  ASSERT_TRUE(IsOk((*host)->CreateIfAbsent("w", *value, Deadline::AfterMs(30'000))));
  absl::StatusOr<Tensor> back = (*host)->Read("w", Deadline::AfterMs(30'000));
  ASSERT_TRUE(IsOk(back));
  EXPECT_EQ(*static_cast<const int32_t*>(back->data()), 7);

  options.tls = TlsFiles();
  absl::StatusOr<std::unique_ptr<ps::VariableHost>> plaintext = NewRemoteVariableHost("ps:0", ps_address, options);
  ASSERT_TRUE(IsOk(plaintext));
  const steady_clock::time_point start = steady_clock::now();
  EXPECT_TRUE(HasError((*plaintext)->Read("w", Deadline::AfterMs(30'000)), absl::StatusCode::kUnavailable,
                       {"parameter server ps:0 (" + ps_address + ") is unavailable"}));
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(30));
}

TEST_F(TlsServerTest, OnlyClientsWithTheJobsCertificatesGetIn) {
  const int port = FreePorts(1)[0];
  absl::StatusOr<std::unique_ptr<Server>> chief = Server::Start(WorkerCluster({port}, 0), Options(Job()));
  ASSERT_TRUE(IsOk(chief));
  // The job's own client certificate, with the token: served.
  EXPECT_TRUE(GetTask(port, Client("ca.pem", "client.pem", "client.key")).ok());
  EXPECT_TRUE(GetTask(port, Client("ca.pem", "node.pem", "node.key")).ok());
  // The token still applies on top of TLS.
  EXPECT_EQ(GetTask(port, Client("ca.pem", "client.pem", "client.key"), /*token=*/false).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // Refused by TLS, each well within the call's 30 s deadline: a plaintext client, one
  // without a certificate, one with a certificate from another CA, one that trusts another
  // CA and so not the server.
  const struct {
    const char* who;
    std::optional<grpc::SslCredentialsOptions> tls;
  } strangers[] = {
      {"plaintext", std::nullopt},
      {"no client certificate", Client("ca.pem", "", "")},
      {"a certificate of another CA", Client("ca.pem", "other_node.pem", "other_node.key")},
      {"trusting another CA", Client("other_ca.pem", "client.pem", "client.key")},
  };
  for (const auto& stranger : strangers) {
    const steady_clock::time_point start = steady_clock::now();
    const grpc::Status status = GetTask(port, stranger.tls);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << stranger.who << ": " << status.error_message();
    EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(20)) << stranger.who;
  }
  EXPECT_TRUE(IsOk((*chief)->coordination().PeerHealth()));
}

TEST_F(TlsServerTest, WithoutACaNoClientCertificateIsAskedFor) {
  const int port = FreePorts(1)[0];
  absl::StatusOr<std::unique_ptr<Server>> chief =
      Server::Start(WorkerCluster({port}, 0), Options(TlsFiles{Path("node.pem"), Path("node.key"), ""}));
  ASSERT_TRUE(IsOk(chief));
  EXPECT_TRUE(GetTask(port, Client("ca.pem", "", "")).ok());
  EXPECT_EQ(GetTask(port, std::nullopt).error_code(), grpc::StatusCode::UNAVAILABLE);  // still TLS
}

TEST_F(TlsServerTest, ATaskThatCannotTalkTlsWithTheChiefFailsWithinItsStartupTimeout) {
  const std::vector<int> ports = FreePorts(2);
  absl::StatusOr<std::unique_ptr<Server>> chief = Server::Start(WorkerCluster(ports, 0), Options(Job()));
  ASSERT_TRUE(IsOk(chief));
  const struct {
    const char* who;
    TlsFiles tls;
    const char* hint;
  } workers[] = {
      {"plaintext", TlsFiles{}, ""},
      {"trusting another CA", TlsFiles{Path("node.pem"), Path("node.key"), Path("other_ca.pem")},
       "this task uses TLS, so the chief must serve TLS too"},
      {"with a certificate of another CA", TlsFiles{Path("other_node.pem"), Path("other_node.key"), Path("ca.pem")},
       "this task's certificate must be signed by it"},
  };
  for (const auto& worker : workers) {
    const steady_clock::time_point start = steady_clock::now();
    EXPECT_TRUE(HasError(Server::Start(WorkerCluster(ports, 1), Options(worker.tls)), absl::StatusCode::kUnavailable,
                         {"could not reach the coordination service on chief task worker:0", "within 2000 ms",
                          worker.hint}))
        << worker.who;
    // The startup timeout, plus what stopping takes; never an unbounded wait.
    EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(20)) << worker.who;
  }
  // The job's own worker still joins.
  EXPECT_TRUE(IsOk(Server::Start(WorkerCluster(ports, 1), Options(Job()))));
}

TEST_F(TlsServerTest, AChiefWithoutTlsIsNoPeerForATlsTask) {
  const std::vector<int> ports = FreePorts(2);
  absl::StatusOr<std::unique_ptr<Server>> chief = Server::Start(WorkerCluster(ports, 0), Options(TlsFiles{}));
  ASSERT_TRUE(IsOk(chief));
  EXPECT_TRUE(HasError(Server::Start(WorkerCluster(ports, 1), Options(Job())), absl::StatusCode::kUnavailable,
                       {"chief task worker:0", "this task uses TLS", "signed by a CA in ca_path '"}));
}

TEST_F(TlsServerTest, BadFilesFailAtStartBeforeAnythingListens) {
  const int port = FreePorts(1)[0];
  TlsFiles garbage_key = Job();
  garbage_key.key_path = Path("garbage.pem");
  EXPECT_TRUE(HasError(Server::Start(WorkerCluster({port}, 0), Options(garbage_key)), absl::StatusCode::kInvalidArgument,
                       {"key_path '", "garbage.pem' holds no PEM private key"}));
  TlsFiles missing_ca = Job();
  missing_ca.ca_path = Path("nowhere/ca.pem");
  EXPECT_TRUE(HasError(Server::Start(WorkerCluster({port}, 0), Options(missing_ca)), absl::StatusCode::kNotFound,
                       {"ca_path: cannot use '", "nowhere/ca.pem'"}));
  // The same from the environment, named by its variables.
  ASSERT_EQ(setenv(kTlsCertEnvironment, Path("garbage.pem").c_str(), 1), 0);
  ASSERT_EQ(setenv(kTlsKeyEnvironment, Path("node.key").c_str(), 1), 0);
  EXPECT_TRUE(HasError(Server::Start(WorkerCluster({port}, 0), Options(TlsFiles{})), absl::StatusCode::kInvalidArgument,
                       {"DIST_TLS_CERT '", "garbage.pem' holds no PEM certificate"}));
  unsetenv(kTlsCertEnvironment);
  unsetenv(kTlsKeyEnvironment);
  // Nothing was bound: the port is still free for a server with good files.
  EXPECT_TRUE(IsOk(Server::Start(WorkerCluster({port}, 0), Options(Job()))));
}

}  // namespace
}  // namespace distribute

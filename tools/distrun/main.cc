// distrun: starts N local workers of a program with a TF_CONFIG each, like
// torchrun / horovodrun for the distribute library. See `distrun --help`.
#include <cstdio>
#include <string>

#include "line_relay.h"
#include "options.h"
#include "supervisor.h"

int main(int argc, char** argv) {
  distrun::ParseResult parsed = distrun::ParseOptions(argc, argv);
  switch (parsed.outcome) {
    case distrun::ParseOutcome::kHelp: {
      std::string usage = distrun::UsageText();
      distrun::WriteAll(1, usage.data(), usage.size());
      return 0;
    }
    case distrun::ParseOutcome::kUsageError: {
      std::string message = "distrun: " + parsed.error + "\n" + distrun::ShortUsageText();
      distrun::WriteAll(2, message.data(), message.size());
      return 2;
    }
    case distrun::ParseOutcome::kRun:
      break;
  }
  return distrun::RunJob(parsed.options);
}

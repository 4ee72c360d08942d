#include "core/util/errno_status.h"

#include <cerrno>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace distribute {

absl::StatusCode CodeForErrno(int error) {
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return absl::StatusCode::kNotFound;
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
      return absl::StatusCode::kResourceExhausted;
    case EIO:
      return absl::StatusCode::kDataLoss;
    case EISDIR:
      return absl::StatusCode::kFailedPrecondition;
    case ENAMETOOLONG:
      return absl::StatusCode::kInvalidArgument;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status ErrnoStatus(int error, absl::string_view what) {
  return absl::Status(CodeForErrno(error),
                      absl::StrCat(what, ": ", std::generic_category().message(error)));
}

}  // namespace distribute

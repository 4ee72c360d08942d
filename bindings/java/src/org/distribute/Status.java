package org.distribute;

/** dist_status_t. */
public enum Status {
  OK(0), CANCELLED(1), UNKNOWN(2), INVALID_ARGUMENT(3), DEADLINE_EXCEEDED(4), NOT_FOUND(5),
  ALREADY_EXISTS(6), PERMISSION_DENIED(7), RESOURCE_EXHAUSTED(8), FAILED_PRECONDITION(9),
  ABORTED(10), OUT_OF_RANGE(11), UNIMPLEMENTED(12), INTERNAL(13), UNAVAILABLE(14), DATA_LOSS(15),
  UNAUTHENTICATED(16);

  public final int code;

  Status(int code) {
    this.code = code;
  }

  public static Status of(int code) {
    for (Status s : values()) if (s.code == code) return s;
    return UNKNOWN;
  }

  /** The library's name of the code (dist_status_name). */
  public String libraryName() {
    return NativeGen.statusName(code);
  }
}

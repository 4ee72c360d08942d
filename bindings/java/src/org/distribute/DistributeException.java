package org.distribute;

/**
 * A failed library call: the dist_status_t code and the library's message. When a Java
 * callback threw, its Throwable is the cause.
 */
public class DistributeException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int code;

  public DistributeException(int code, String message) {
    super(message);
    this.code = code;
  }

  public DistributeException(int code, String message, Throwable cause) {
    super(message, cause);
    this.code = code;
  }

  /** The DIST_* status code (see {@link Status}). */
  public int getCode() {
    return code;
  }

  /** The code as a {@link Status}. */
  public Status getStatus() {
    return Status.of(code);
  }

  @Override
  public String toString() {
    return "DistributeException[" + getStatus() + "]: " + getMessage();
  }
}

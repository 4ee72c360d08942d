package org.distribute;

/** dist_communication_implementation_t (DIST_COMMUNICATION_*). */
public enum CommunicationImplementation implements Enums.Coded {
  AUTO(0),
  RING(1),
  NCCL(2);

  private final int code;

  CommunicationImplementation(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static CommunicationImplementation of(int code) {
    return Enums.of(CommunicationImplementation.class, code);
  }
}

package org.distribute;

/** dist_shared_memory_t (DIST_SHARED_MEMORY_*): whether workers on one host exchange bytes through shared memory. */
public enum SharedMemoryMode implements Enums.Coded {
  AUTO(0),
  ON(1),
  OFF(2);

  private final int code;

  SharedMemoryMode(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static SharedMemoryMode of(int code) {
    return Enums.of(SharedMemoryMode.class, code);
  }
}

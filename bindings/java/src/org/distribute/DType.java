package org.distribute;

/** dist_dtype_t (DIST_FLOAT32, ...). */
public enum DType implements Enums.Coded {
  FLOAT32(1), FLOAT64(2), INT32(3), UINT8(4), INT16(5), INT8(6), INT64(9), BOOL(10), BFLOAT16(14),
  FLOAT16(19);

  private final int code;

  DType(int code) {
    this.code = code;
  }

  @Override
  public int code() {
    return code;
  }

  public static DType of(int code) {
    return Enums.of(DType.class, code);
  }

  /** Bytes per element (dist_dtype_size). */
  public long size() {
    return NativeGen.dtypeSize(code);
  }

  /** The library's name (dist_dtype_name). */
  public String libraryName() {
    return NativeGen.dtypeName(code);
  }
}

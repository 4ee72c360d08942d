package org.distribute;

/** dist_compression_t (DIST_COMPRESSION_*): how TFRecord files are compressed (tf.io.TFRecordOptions.compression_type). */
public enum Compression implements Enums.Coded {
  /** compression_type "" (or None): plain files. */
  NONE(0),
  /** "ZLIB": a zlib stream (RFC 1950). */
  ZLIB(1),
  /** "GZIP": a gzip file (RFC 1952; members may be concatenated). */
  GZIP(2);

  private final int code;

  Compression(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static Compression of(int code) {
    return Enums.of(Compression.class, code);
  }
}

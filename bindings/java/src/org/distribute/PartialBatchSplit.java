package org.distribute;

/**
 * dist_partial_batch_split_t (DIST_PARTIAL_BATCH_*): how a partial global batch of p rows is
 * split across R replicas by {@link Strategy#distributeDataset}.
 */
public enum PartialBatchSplit implements Enums.Coded {
  /**
   * The default: ceil(global batch / R) rows per replica in order, as a full batch is split
   * (the last replicas may get empty batches): range(10).batch(4) over 2 replicas ends with
   * [8, 9] and [].
   */
  IN_ORDER(0),
  /** TF 2.x's rebatching: ceil(p / R) rows per replica in order: range(10).batch(4) over 2 replicas ends with [8] and [9]. */
  EVEN(1);

  private final int code;

  PartialBatchSplit(int code) {
    this.code = code;
  }

  /** The C constant. */
  @Override
  public int code() {
    return code;
  }

  public static PartialBatchSplit of(int code) {
    return Enums.of(PartialBatchSplit.class, code);
  }
}

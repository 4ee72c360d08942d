package org.distribute;

import static java.lang.ref.Reference.reachabilityFence;

/** An input pipeline (tf.data.Dataset); transformations return new datasets. */
public final class Dataset extends Handle {
  Dataset(long handle) {
    super(handle, true, NativeGen::datasetDestroy);
  }

  public static Dataset fromTensorSlices(Value... components) {
    try {
      return new Dataset(NativeHand.datasetFromTensorSlices(Value.handles(components)));
    } finally {
      reachabilityFence(components);
    }
  }
  public static Dataset range(long start, long stop, long step) { return new Dataset(NativeGen.datasetRange(start, stop, step)); }
  public static Dataset range(long stop) { return range(0, stop, 1); }

  /** Elements from {@code fn} (null ends the dataset); each iterator restarts at index 0. */
  public static Dataset fromGenerator(int numComponents, Functions.Generator fn) {
    return new Dataset(NativeHand.datasetFromGenerator(new Callbacks.State(fn), numComponents));
  }

  public static Dataset fromTextFiles(String... paths) { return new Dataset(NativeHand.datasetFromFiles(0, paths, 0, 0, 0, 0)); }
  public static Dataset fromFixedLengthRecords(String[] paths, long recordBytes, long headerBytes, long footerBytes) {
    return new Dataset(NativeHand.datasetFromFiles(1, paths, recordBytes, headerBytes, footerBytes, 0));
  }
  public static Dataset fromTFRecordFiles(String... paths) { return new Dataset(NativeHand.datasetFromFiles(2, paths, 0, 0, 0, 0)); }
  /**
   * TFRecord files written compressed (tf.data.TFRecordDataset(paths, compression_type=...));
   * {@link Compression#NONE} reads plain files as {@link #fromTFRecordFiles(String...)} does. A
   * corrupt or truncated file fails the iterator's next with {@link Status#DATA_LOSS}.
   */
  public static Dataset fromTFRecordFiles(Compression compression, String... paths) {
    return new Dataset(NativeHand.datasetFromFiles(3, paths, 0, 0, 0, compression.code()));
  }

  public Dataset batch(long batchSize, boolean dropRemainder) { try { return new Dataset(NativeGen.datasetBatch(h(), batchSize, dropRemainder ? 1 : 0)); } finally { reachabilityFence(this); } }
  public Dataset batch(long batchSize) { return batch(batchSize, false); }
  public Dataset shard(long numShards, long index) { try { return new Dataset(NativeGen.datasetShard(h(), numShards, index)); } finally { reachabilityFence(this); } }
  public Dataset repeat(long count) { try { return new Dataset(NativeGen.datasetRepeat(h(), count)); } finally { reachabilityFence(this); } }
  public Dataset shuffle(long bufferSize, long seed) { try { return new Dataset(NativeGen.datasetShuffle(h(), bufferSize, seed)); } finally { reachabilityFence(this); } }
  /** DIST_AUTOTUNE (tf.data.AUTOTUNE) as map's numParallelCalls: as many calls at a time as the machine has hardware threads. */
  public static final int AUTOTUNE = -1;

  /**
   * dist_dataset_map: numParallelCalls >= 1 or {@link #AUTOTUNE}; the library caps the threads
   * at 4 per hardware thread and starts them only as the elements need them.
   */
  public Dataset map(int numOutputs, int numParallelCalls, Functions.MapFunction fn) {
    try {
      return new Dataset(NativeHand.datasetMap(h(), new Callbacks.State(fn), numOutputs, numParallelCalls));
    } finally {
      reachabilityFence(this);
    }
  }
  public Dataset map(int numOutputs, Functions.MapFunction fn) { return map(numOutputs, 1, fn); }
  public Dataset prefetch(long bufferSize) { try { return new Dataset(NativeGen.datasetPrefetch(h(), bufferSize)); } finally { reachabilityFence(this); } }
  public Dataset take(long count) { try { return new Dataset(NativeGen.datasetTake(h(), count)); } finally { reachabilityFence(this); } }
  public Dataset skip(long count) { try { return new Dataset(NativeGen.datasetSkip(h(), count)); } finally { reachabilityFence(this); } }
  public int numComponents() { try { return NativeGen.datasetNumComponents(h()); } finally { reachabilityFence(this); } }

  /** A local iterator over the elements. */
  public DistributedIterator iterator() { try { return new DistributedIterator(NativeGen.datasetMakeIterator(h()), 0, null); } finally { reachabilityFence(this); } }
}

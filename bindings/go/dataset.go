package distribute

/*
#include "shim.h"
*/
import "C"

import "runtime"

// Dataset is a dist_dataset_t (tf.data.Dataset). Transformations return new datasets;
// Close each (or leave it to the garbage collector). A dataset made from another, and an
// iterator over it, keep what they read alive in the library, so closing the source first
// is safe.
type Dataset struct{ p *C.dist_dataset_t }

func newDataset(p *C.dist_dataset_t) *Dataset {
	if p == nil {
		return nil
	}
	d := &Dataset{p: p}
	runtime.SetFinalizer(d, finalizeDataset)
	return d
}

func (d *Dataset) ptr() *C.dist_dataset_t {
	if d == nil {
		return nil
	}
	return d.p
}

// Close (dist_dataset_destroy).
func (d *Dataset) Close() {
	if d == nil || d.p == nil {
		return
	}
	runtime.SetFinalizer(d, nil)
	C.dist_dataset_destroy(d.p)
	d.p = nil
}

// release hands the dataset to the library (which takes ownership).
func (d *Dataset) release() *C.dist_dataset_t {
	runtime.SetFinalizer(d, nil)
	p := d.p
	d.p = nil
	return p
}

func datasetCall(op string, f func(out **C.dist_dataset_t) C.dist_status_t, keep ...interface{}) (*Dataset, error) {
	var out *C.dist_dataset_t
	err := call(op, func() C.dist_status_t { return f(&out) }, keep...)
	return newDataset(out), err
}

// DatasetFromTensorSlices (dist_dataset_from_tensor_slices).
func DatasetFromTensorSlices(components ...*Value) (*Dataset, error) {
	a := cValues(components)
	return datasetCall("dist_dataset_from_tensor_slices", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_from_tensor_slices(firstPtr(a), C.int32_t(len(a)), out)
	}, components)
}

// DatasetRange (dist_dataset_range).
func DatasetRange(start, stop, step int64) (*Dataset, error) {
	return datasetCall("dist_dataset_range", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_range(C.int64_t(start), C.int64_t(stop), C.int64_t(step), out)
	})
}

// GeneratorFunc produces element index (numComponents new tensors), or end = true.
// Called from one library thread at a time.
type GeneratorFunc func(index int64) (components []*Value, end bool, err error)

// DatasetFromGenerator (dist_dataset_from_generator).
func DatasetFromGenerator(numComponents int, fn GeneratorFunc) (*Dataset, error) {
	h := newCallback(&callbackState{fn: fn})
	d, err := datasetCall("dist_dataset_from_generator", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.distgo_from_generator(C.uintptr_t(h), C.int32_t(numComponents), out)
	})
	if err != nil {
		freeCallback(h)
	}
	return d, err
}

//export goGeneratorCall
func goGeneratorCall(index C.int64_t, comps **C.dist_value_t, n C.int32_t, end *C.int32_t, h C.uintptr_t) C.dist_status_t {
	st := stateOf(h)
	if st == nil {
		return C.DIST_INTERNAL
	}
	err := protect(func() error {
		vs, e, err := st.fn.(GeneratorFunc)(int64(index))
		if err != nil {
			CloseAll(vs)
			return err
		}
		if e {
			CloseAll(vs)
			*end = 1
			return nil
		}
		return storeResults("generator", vs, cArray(comps, n))
	})
	if err != nil {
		return st.fail(err)
	}
	return C.DIST_OK
}

// DatasetFromTextFiles (dist_dataset_from_text_files).
func DatasetFromTextFiles(paths ...string) (*Dataset, error) {
	p, free := cStrings(paths)
	defer free()
	return datasetCall("dist_dataset_from_text_files", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_from_text_files(p, C.int32_t(len(paths)), out)
	})
}

// DatasetFromFixedLengthRecords (dist_dataset_from_fixed_length_records).
func DatasetFromFixedLengthRecords(paths []string, recordBytes, headerBytes, footerBytes int64) (*Dataset, error) {
	p, free := cStrings(paths)
	defer free()
	return datasetCall("dist_dataset_from_fixed_length_records", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_from_fixed_length_records(p, C.int32_t(len(paths)), C.int64_t(recordBytes),
			C.int64_t(headerBytes), C.int64_t(footerBytes), out)
	})
}

// DatasetFromTFRecordFiles (dist_dataset_from_tfrecord_files).
func DatasetFromTFRecordFiles(paths ...string) (*Dataset, error) {
	p, free := cStrings(paths)
	defer free()
	return datasetCall("dist_dataset_from_tfrecord_files", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_from_tfrecord_files(p, C.int32_t(len(paths)), out)
	})
}

// Compression is a dist_compression_t (tf.io.TFRecordOptions.compression_type).
type Compression int32

// TFRecord compressions.
const (
	CompressionNone Compression = C.DIST_COMPRESSION_NONE
	CompressionZlib Compression = C.DIST_COMPRESSION_ZLIB
	CompressionGzip Compression = C.DIST_COMPRESSION_GZIP
)

// DatasetFromCompressedTFRecordFiles reads TFRecord files written with compression
// (dist_dataset_from_compressed_tfrecord_files).
func DatasetFromCompressedTFRecordFiles(compression Compression, paths ...string) (*Dataset, error) {
	p, free := cStrings(paths)
	defer free()
	return datasetCall("dist_dataset_from_compressed_tfrecord_files", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_from_compressed_tfrecord_files(p, C.int32_t(len(paths)), C.dist_compression_t(compression), out)
	})
}

func b32(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// Batch (dist_dataset_batch).
func (d *Dataset) Batch(batchSize int64, dropRemainder bool) (*Dataset, error) {
	return datasetCall("dist_dataset_batch", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_batch(d.ptr(), C.int64_t(batchSize), b32(dropRemainder), out)
	}, d)
}

// Shard (dist_dataset_shard).
func (d *Dataset) Shard(numShards, index int64) (*Dataset, error) {
	return datasetCall("dist_dataset_shard", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_shard(d.ptr(), C.int64_t(numShards), C.int64_t(index), out)
	}, d)
}

// Repeat (dist_dataset_repeat); -1 repeats forever.
func (d *Dataset) Repeat(count int64) (*Dataset, error) {
	return datasetCall("dist_dataset_repeat", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_repeat(d.ptr(), C.int64_t(count), out)
	}, d)
}

// Shuffle (dist_dataset_shuffle).
func (d *Dataset) Shuffle(bufferSize int64, seed uint64) (*Dataset, error) {
	return datasetCall("dist_dataset_shuffle", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_shuffle(d.ptr(), C.int64_t(bufferSize), C.uint64_t(seed), out)
	}, d)
}

// Autotune (DIST_AUTOTUNE, tf.data.AUTOTUNE) as Map's numParallelCalls: as many calls at
// a time as the machine has hardware threads.
const Autotune = int(C.DIST_AUTOTUNE)

// MapFunc turns one element (borrowed tensors) into numOutputs new tensors. It may run on
// several library threads at once (numParallelCalls).
type MapFunc func(inputs []*Value) ([]*Value, error)

// Map (dist_dataset_map): numParallelCalls >= 1 or Autotune; the library caps the threads
// at 4 per hardware thread and starts them only as the elements need them.
func (d *Dataset) Map(fn MapFunc, numOutputs, numParallelCalls int) (*Dataset, error) {
	h := newCallback(&callbackState{fn: fn})
	out, err := datasetCall("dist_dataset_map", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.distgo_map(d.ptr(), C.uintptr_t(h), C.int32_t(numOutputs), C.int32_t(numParallelCalls), out)
	}, d)
	if err != nil {
		freeCallback(h)
	}
	return out, err
}

//export goMapCall
func goMapCall(inputs **C.dist_value_t, nin C.int32_t, outputs **C.dist_value_t, nout C.int32_t, h C.uintptr_t) C.dist_status_t {
	st := stateOf(h)
	if st == nil {
		return C.DIST_INTERNAL
	}
	err := protect(func() error {
		vs, err := st.fn.(MapFunc)(borrowedValues(cArray(inputs, nin)))
		if err != nil {
			CloseAll(vs)
			return err
		}
		return storeResults("map function", vs, cArray(outputs, nout))
	})
	if err != nil {
		return st.fail(err)
	}
	return C.DIST_OK
}

// Prefetch (dist_dataset_prefetch).
func (d *Dataset) Prefetch(bufferSize int64) (*Dataset, error) {
	return datasetCall("dist_dataset_prefetch", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_prefetch(d.ptr(), C.int64_t(bufferSize), out)
	}, d)
}

// Take (dist_dataset_take).
func (d *Dataset) Take(count int64) (*Dataset, error) {
	return datasetCall("dist_dataset_take", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_take(d.ptr(), C.int64_t(count), out)
	}, d)
}

// Skip (dist_dataset_skip).
func (d *Dataset) Skip(count int64) (*Dataset, error) {
	return datasetCall("dist_dataset_skip", func(out **C.dist_dataset_t) C.dist_status_t {
		return C.dist_dataset_skip(d.ptr(), C.int64_t(count), out)
	}, d)
}

// NumComponents (dist_dataset_num_components).
func (d *Dataset) NumComponents() (int, error) {
	var n C.int32_t
	err := call("dist_dataset_num_components", func() C.dist_status_t { return C.dist_dataset_num_components(d.ptr(), &n) }, d)
	return int(n), err
}

// Iterator is a dist_iterator_t: one pass over a dataset or distributed dataset. Close it
// to stop its background threads at once; a forgotten iterator is released by the garbage
// collector.
type Iterator struct {
	p *C.dist_iterator_t
	n int
}

func newIterator(p *C.dist_iterator_t, n int) *Iterator {
	if p == nil {
		return nil
	}
	it := &Iterator{p: p, n: n}
	runtime.SetFinalizer(it, finalizeIterator)
	return it
}

func (it *Iterator) ptr() *C.dist_iterator_t {
	if it == nil {
		return nil
	}
	return it.p
}

// Close (dist_iterator_destroy).
func (it *Iterator) Close() {
	if it == nil || it.p == nil {
		return
	}
	runtime.SetFinalizer(it, nil)
	C.dist_iterator_destroy(it.p)
	it.p = nil
}

// MakeIterator (dist_dataset_make_iterator).
func (d *Dataset) MakeIterator() (*Iterator, error) {
	n, err := d.NumComponents()
	if err != nil {
		return nil, err
	}
	var out *C.dist_iterator_t
	err = call("dist_dataset_make_iterator", func() C.dist_status_t { return C.dist_dataset_make_iterator(d.ptr(), &out) }, d)
	return newIterator(out, n), err
}

// GetNext is the next element (dist_iterator_get_next); ErrOutOfRange at the end.
func (it *Iterator) GetNext() ([]*Value, error) {
	outs := make([]*C.dist_value_t, it.numComponents())
	err := call("dist_iterator_get_next", func() C.dist_status_t {
		return C.dist_iterator_get_next(it.ptr(), firstPtr(outs), C.int32_t(len(outs)))
	}, it)
	if err != nil {
		return nil, err
	}
	return ownedValues(outs), nil
}

// Next is the next element and true, or nil and false at the end
// (dist_iterator_get_next_as_optional).
func (it *Iterator) Next() ([]*Value, bool, error) {
	outs := make([]*C.dist_value_t, it.numComponents())
	var has C.int32_t
	err := call("dist_iterator_get_next_as_optional", func() C.dist_status_t {
		return C.dist_iterator_get_next_as_optional(it.ptr(), firstPtr(outs), C.int32_t(len(outs)), &has)
	}, it)
	if err != nil || has == 0 {
		return nil, false, err
	}
	return ownedValues(outs), true, nil
}

func (it *Iterator) numComponents() int {
	if it == nil {
		return 0
	}
	return it.n
}

// ---- Distributed input ----

// AutoShardPolicy is a dist_auto_shard_policy_t.
type AutoShardPolicy int32

// Auto-shard policies.
const (
	AutoShardOff  AutoShardPolicy = C.DIST_AUTO_SHARD_OFF
	AutoShardAuto AutoShardPolicy = C.DIST_AUTO_SHARD_AUTO
	AutoShardFile AutoShardPolicy = C.DIST_AUTO_SHARD_FILE
	AutoShardData AutoShardPolicy = C.DIST_AUTO_SHARD_DATA
)

// ReplicationMode is a dist_input_replication_mode_t.
type ReplicationMode int32

// Input replication modes.
const (
	InputPerWorker  ReplicationMode = C.DIST_INPUT_PER_WORKER
	InputPerReplica ReplicationMode = C.DIST_INPUT_PER_REPLICA
)

// PartialBatchSplit is a dist_partial_batch_split_t: how a partial global batch is split
// across replicas.
type PartialBatchSplit int32

// Partial batch splits.
const (
	PartialBatchInOrder PartialBatchSplit = C.DIST_PARTIAL_BATCH_IN_ORDER
	PartialBatchEven    PartialBatchSplit = C.DIST_PARTIAL_BATCH_EVEN
)

// InputOptions is a dist_input_options_t (tf.distribute.InputOptions). What is made with
// them keeps its own copy.
type InputOptions struct{ p *C.dist_input_options_t }

func (o *InputOptions) ptr() *C.dist_input_options_t {
	if o == nil {
		return nil
	}
	return o.p
}

// NewInputOptions (dist_input_options_create).
func NewInputOptions() (*InputOptions, error) {
	var out *C.dist_input_options_t
	err := call("dist_input_options_create", func() C.dist_status_t { return C.dist_input_options_create(&out) })
	if err != nil {
		return nil, err
	}
	o := &InputOptions{p: out}
	runtime.SetFinalizer(o, finalizeInputOptions)
	return o, nil
}

// Close (dist_input_options_destroy).
func (o *InputOptions) Close() {
	if o == nil || o.p == nil {
		return
	}
	runtime.SetFinalizer(o, nil)
	C.dist_input_options_destroy(o.p)
	o.p = nil
}

// SetPrefetchDepth (dist_input_options_set_prefetch_depth).
func (o *InputOptions) SetPrefetchDepth(depth int64) error {
	return call("dist_input_options_set_prefetch_depth", func() C.dist_status_t {
		return C.dist_input_options_set_prefetch_depth(o.ptr(), C.int64_t(depth))
	}, o)
}

// SetReplicationMode (dist_input_options_set_replication_mode).
func (o *InputOptions) SetReplicationMode(m ReplicationMode) error {
	return call("dist_input_options_set_replication_mode", func() C.dist_status_t {
		return C.dist_input_options_set_replication_mode(o.ptr(), C.dist_input_replication_mode_t(m))
	}, o)
}

// SetAutoShardPolicy (dist_input_options_set_auto_shard_policy).
func (o *InputOptions) SetAutoShardPolicy(p AutoShardPolicy) error {
	return call("dist_input_options_set_auto_shard_policy", func() C.dist_status_t {
		return C.dist_input_options_set_auto_shard_policy(o.ptr(), C.dist_auto_shard_policy_t(p))
	}, o)
}

// SetFetchToDevice (dist_input_options_set_fetch_to_device).
func (o *InputOptions) SetFetchToDevice(enable bool) error {
	return call("dist_input_options_set_fetch_to_device", func() C.dist_status_t {
		return C.dist_input_options_set_fetch_to_device(o.ptr(), b32(enable))
	}, o)
}

// SetPerReplicaBatches (dist_input_options_set_per_replica_batches).
func (o *InputOptions) SetPerReplicaBatches(enable bool) error {
	return call("dist_input_options_set_per_replica_batches", func() C.dist_status_t {
		return C.dist_input_options_set_per_replica_batches(o.ptr(), b32(enable))
	}, o)
}

// SetPartialBatchSplit (dist_input_options_set_partial_batch_split).
func (o *InputOptions) SetPartialBatchSplit(split PartialBatchSplit) error {
	return call("dist_input_options_set_partial_batch_split", func() C.dist_status_t {
		return C.dist_input_options_set_partial_batch_split(o.ptr(), C.dist_partial_batch_split_t(split))
	}, o)
}

// DistributedDataset is a dist_distributed_dataset_t. Iterators made from it stay valid
// after it is closed or collected.
type DistributedDataset struct{ p *C.dist_distributed_dataset_t }

func newDistributedDataset(p *C.dist_distributed_dataset_t) *DistributedDataset {
	d := &DistributedDataset{p: p}
	runtime.SetFinalizer(d, finalizeDistributedDataset)
	return d
}

func (d *DistributedDataset) ptr() *C.dist_distributed_dataset_t {
	if d == nil {
		return nil
	}
	return d.p
}

// Close (dist_distributed_dataset_destroy).
func (d *DistributedDataset) Close() {
	if d == nil || d.p == nil {
		return
	}
	runtime.SetFinalizer(d, nil)
	C.dist_distributed_dataset_destroy(d.p)
	d.p = nil
}

// DistributeDataset (dist_strategy_distribute_dataset); options may be nil.
func (s *Strategy) DistributeDataset(d *Dataset, options *InputOptions) (*DistributedDataset, error) {
	var out *C.dist_distributed_dataset_t
	err := call("dist_strategy_distribute_dataset", func() C.dist_status_t {
		return C.dist_strategy_distribute_dataset(s.ptr(), d.ptr(), options.ptr(), &out)
	}, s, d, options)
	if err != nil {
		return nil, err
	}
	return newDistributedDataset(out), nil
}

// DatasetFunc builds the dataset of one input pipeline; ctx is borrowed for the call.
type DatasetFunc func(ctx *InputContext) (*Dataset, error)

// DistributeDatasetsFromFunction (dist_strategy_distribute_datasets_from_function).
func (s *Strategy) DistributeDatasetsFromFunction(fn DatasetFunc, options *InputOptions) (*DistributedDataset, error) {
	st := &callbackState{fn: fn}
	h := newCallback(st)
	defer freeCallback(h) // also released by the library's free_fn; freeCallback is idempotent
	var out *C.dist_distributed_dataset_t
	err := call("dist_strategy_distribute_datasets_from_function", func() C.dist_status_t {
		return C.distgo_distribute_datasets_from_function(s.ptr(), C.uintptr_t(h), options.ptr(), &out)
	}, s, options)
	if err != nil {
		return nil, st.finish("", err)
	}
	return newDistributedDataset(out), nil
}

//export goDatasetCall
func goDatasetCall(ctx *C.dist_input_context_t, out **C.dist_dataset_t, h C.uintptr_t) C.dist_status_t {
	st := stateOf(h)
	if st == nil {
		return C.DIST_INTERNAL
	}
	err := protect(func() error {
		d, err := st.fn.(DatasetFunc)(&InputContext{p: ctx, borrowed: true})
		if err != nil {
			d.Close()
			return err
		}
		if d == nil || d.p == nil {
			return argError("dataset function", "returned no dataset")
		}
		*out = d.release()
		return nil
	})
	if err != nil {
		return st.fail(err)
	}
	return C.DIST_OK
}

// MakeIterator (dist_distributed_dataset_make_iterator): each element is one PerReplica value per component.
func (d *DistributedDataset) MakeIterator() (*Iterator, error) {
	n, err := d.NumComponents()
	if err != nil {
		return nil, err
	}
	var out *C.dist_iterator_t
	err = call("dist_distributed_dataset_make_iterator", func() C.dist_status_t {
		return C.dist_distributed_dataset_make_iterator(d.ptr(), &out)
	}, d)
	return newIterator(out, n), err
}

// NumComponents (dist_distributed_dataset_num_components).
func (d *DistributedDataset) NumComponents() (int, error) {
	var n C.int32_t
	err := call("dist_distributed_dataset_num_components", func() C.dist_status_t {
		return C.dist_distributed_dataset_num_components(d.ptr(), &n)
	}, d)
	return int(n), err
}

// MakeDatasetIterator (dist_strategy_make_dataset_iterator).
func (s *Strategy) MakeDatasetIterator(d *Dataset) (*Iterator, error) {
	n, err := d.NumComponents()
	if err != nil {
		return nil, err
	}
	var out *C.dist_iterator_t
	err = call("dist_strategy_make_dataset_iterator", func() C.dist_status_t {
		return C.dist_strategy_make_dataset_iterator(s.ptr(), d.ptr(), &out)
	}, s, d)
	return newIterator(out, n), err
}

// MakeInputFnIterator (dist_strategy_make_input_fn_iterator); fn runs during the call.
// numComponents is the number of components of fn's datasets.
func (s *Strategy) MakeInputFnIterator(fn DatasetFunc, numComponents int) (*Iterator, error) {
	st := &callbackState{fn: fn}
	h := newCallback(st)
	defer freeCallback(h)
	var out *C.dist_iterator_t
	err := call("dist_strategy_make_input_fn_iterator", func() C.dist_status_t {
		return C.distgo_make_input_fn_iterator(s.ptr(), C.uintptr_t(h), &out)
	}, s)
	if err != nil {
		return nil, st.finish("", err)
	}
	return newIterator(out, numComponents), nil
}

// InputContext is a dist_input_context_t (tf.distribute.InputContext).
type InputContext struct {
	p        *C.dist_input_context_t
	borrowed bool
}

func (c *InputContext) ptr() *C.dist_input_context_t {
	if c == nil {
		return nil
	}
	return c.p
}

// NewInputContext (dist_input_context_create).
func NewInputContext(numInputPipelines, inputPipelineID, numReplicasInSync int) (*InputContext, error) {
	var out *C.dist_input_context_t
	err := call("dist_input_context_create", func() C.dist_status_t {
		return C.dist_input_context_create(C.int32_t(numInputPipelines), C.int32_t(inputPipelineID), C.int32_t(numReplicasInSync), &out)
	})
	if err != nil {
		return nil, err
	}
	c := &InputContext{p: out}
	runtime.SetFinalizer(c, finalizeInputContext)
	return c, nil
}

// Close (dist_input_context_destroy); a no-op on a borrowed context (which has no
// finalizer either: the library owns it).
func (c *InputContext) Close() {
	if c == nil || c.p == nil || c.borrowed {
		return
	}
	runtime.SetFinalizer(c, nil)
	C.dist_input_context_destroy(c.p)
	c.p = nil
}

// NumInputPipelines (dist_input_context_num_input_pipelines).
func (c *InputContext) NumInputPipelines() (int, error) {
	var n C.int32_t
	err := call("dist_input_context_num_input_pipelines", func() C.dist_status_t {
		return C.dist_input_context_num_input_pipelines(c.ptr(), &n)
	}, c)
	return int(n), err
}

// InputPipelineID (dist_input_context_input_pipeline_id).
func (c *InputContext) InputPipelineID() (int, error) {
	var n C.int32_t
	err := call("dist_input_context_input_pipeline_id", func() C.dist_status_t {
		return C.dist_input_context_input_pipeline_id(c.ptr(), &n)
	}, c)
	return int(n), err
}

// NumReplicasInSync (dist_input_context_num_replicas_in_sync).
func (c *InputContext) NumReplicasInSync() (int, error) {
	var n C.int32_t
	err := call("dist_input_context_num_replicas_in_sync", func() C.dist_status_t {
		return C.dist_input_context_num_replicas_in_sync(c.ptr(), &n)
	}, c)
	return int(n), err
}

// PerReplicaBatchSize (dist_input_context_per_replica_batch_size).
func (c *InputContext) PerReplicaBatchSize(globalBatchSize int64) (int64, error) {
	var n C.int64_t
	err := call("dist_input_context_per_replica_batch_size", func() C.dist_status_t {
		return C.dist_input_context_per_replica_batch_size(c.ptr(), C.int64_t(globalBatchSize), &n)
	}, c)
	return int64(n), err
}

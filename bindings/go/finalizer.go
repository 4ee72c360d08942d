package distribute

import (
	"sync"
	"sync/atomic"
)

// Finalizers. Every handle the caller owns gets a finalizer when it is made, so that one a
// program forgets to Close is released once the garbage collector finds it unreachable.
// The finalizer runs the handle's Close; Close clears it (runtime.SetFinalizer(h, nil)), so
// a closed handle is never released twice, and Close stays idempotent.
//
//   - Borrowed handles get none: values, strategies, input contexts, closure arguments and
//     iterators lent to a callback, and CurrentReplicaContext, belong to the library. A
//     ReplicaContext from JoinReplica gets none either: only Leave, on the joining OS
//     thread, may release it.
//   - Order does not matter to the library: children keep their parents alive in C (a
//     value its strategy, an iterator its dataset, a coordinator its strategy), so the
//     collector may release a parent's Go handle first. Where releasing a parent changes
//     what a child does, the child's Go handle points at the parent's, so the parent is
//     not collected before it: a RemoteValue or PerWorker keeps its Coordinator (whose
//     release cancels the closures still queued and drops the workers' resources).
//   - No call is in flight when a handle is released: every method passes the handles
//     whose C pointers it uses to call (its keep arguments), or calls runtime.KeepAlive
//     after the last use of C memory they own (a tensor's buffer, a returned string).
//   - Finalizers never block: a release may wait (the last reference to a strategy stops
//     its threads, an iterator waits for its background threads, a coordinator for its
//     running closures, a server for its shutdown; releasing a value may drop the last
//     reference to its strategy), so the finalizer only queues the Close, and one
//     goroutine, started while the queue is not empty, runs the queued Closes in order.
//     That goroutine is never one of a strategy's replica threads (they run Go code only
//     inside a callback, locked to it), where dist_strategy_destroy is not allowed.
//   - Finalizers never panic: they only queue; Close calls a destroy function, which
//     accepts anything (NULL, a destroyed handle) and returns nothing.

// collected counts, by handle type, the handles their finalizer released (not Close):
// read by the binding's tests through FinalizedHandles (testhooks.go, built with
// -tags distribute_testhooks).
var collected sync.Map // type name -> *int64

// finalizer is the finalizer of the owned handles of type T: it queues release(h), and
// counts h under name once it has run.
func finalizer[T any](name string, release func(*T)) func(*T) {
	n := new(int64)
	collected.Store(name, n)
	return func(h *T) {
		releaseLater(func() {
			release(h)
			atomic.AddInt64(n, 1)
		})
	}
}

// One finalizer per handle type that the caller can own.
var (
	finalizeValue                  = finalizer("Value", (*Value).Close)
	finalizeStrategy               = finalizer("Strategy", (*Strategy).Close)
	finalizeDataset                = finalizer("Dataset", (*Dataset).Close)
	finalizeIterator               = finalizer("Iterator", (*Iterator).Close)
	finalizeInputOptions           = finalizer("InputOptions", (*InputOptions).Close)
	finalizeDistributedDataset     = finalizer("DistributedDataset", (*DistributedDataset).Close)
	finalizeInputContext           = finalizer("InputContext", (*InputContext).Close)
	finalizeDevice                 = finalizer("Device", (*Device).Close)
	finalizeCrossDeviceOps         = finalizer("CrossDeviceOps", (*CrossDeviceOps).Close)
	finalizeCommunicationOptions   = finalizer("CommunicationOptions", (*CommunicationOptions).Close)
	finalizeCluster                = finalizer("Cluster", (*Cluster).Close)
	finalizeServerOptions          = finalizer("ServerOptions", (*ServerOptions).Close)
	finalizeServer                 = finalizer("Server", (*Server).Close)
	finalizeParameterServerOptions = finalizer("ParameterServerOptions", (*ParameterServerOptions).Close)
	finalizeClosureArgs            = finalizer("ClosureArgs", (*ClosureArgs).Close)
	finalizeCoordinator            = finalizer("Coordinator", (*Coordinator).Close)
	finalizeRemoteValue            = finalizer("RemoteValue", (*RemoteValue).Close)
	finalizePerWorker              = finalizer("PerWorker", (*PerWorker).Close)
)

// The releases finalizers queued, run in order by one goroutine while there are any.
var releases struct {
	mu      sync.Mutex
	queue   []func()
	running bool // a goroutine is running drainReleases
}

// releaseLater queues release and returns at once.
func releaseLater(release func()) {
	releases.mu.Lock()
	releases.queue = append(releases.queue, release)
	start := !releases.running
	releases.running = true
	releases.mu.Unlock()
	if start {
		go drainReleases()
	}
}

// drainReleases runs the queued releases until the queue is empty, then ends.
func drainReleases() {
	for {
		releases.mu.Lock()
		if len(releases.queue) == 0 {
			releases.running = false
			releases.queue = nil
			releases.mu.Unlock()
			return
		}
		release := releases.queue[0]
		releases.queue[0] = nil
		releases.queue = releases.queue[1:]
		releases.mu.Unlock()
		release()
	}
}

//go:build distribute_testhooks

package distribute

import "sync/atomic"

// FinalizedHandles is, by handle type ("Value", "Strategy", ...), how many handles their
// finalizer has released since the process started (handles released by Close are not
// counted). For the binding's tests only: it exists in builds with -tags
// distribute_testhooks.
func FinalizedHandles() map[string]int64 {
	out := map[string]int64{}
	collected.Range(func(name, n interface{}) bool {
		out[name.(string)] = atomic.LoadInt64(n.(*int64))
		return true
	})
	return out
}

package main

// The model and the data set are the C demo's own (examples/c/train_mlp/mlp.c and
// glyphs.c, compiled into this program): the same glyph images from the same seed and the
// same forward/backward pass, so the Go program trains the C demo's weights. Everything
// about distribution (strategies, datasets, run, all-reduce, merge_call, update) is Go.

/*
#cgo CFLAGS: -I${SRCDIR}/../../c/train_mlp -O2
#cgo LDFLAGS: -lm
#include "glyphs.c"
#include "mlp.c"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

const (
	pixels      = C.GLYPHS_PIXELS
	classes     = C.GLYPHS_CLASSES
	headerBytes = C.GLYPHS_HEADER_BYTES
	recordBytes = C.GLYPHS_RECORD_BYTES
	numParams   = C.MLP_NUM_PARAMS
)

type shape = C.mlp_shape_t

func modelShape(hidden int) shape {
	return shape{inputs: pixels, hidden: C.int32_t(hidden), classes: classes}
}

// paramShape is parameter p's dimensions.
func paramShape(s shape, p int) []int64 {
	var dims [2]C.int64_t
	var rank C.int32_t
	C.mlp_param_size(s, C.int(p), &dims[0], &rank)
	out := make([]int64, rank)
	for i := range out {
		out[i] = int64(dims[i])
	}
	return out
}

func paramName(p int) string { return C.GoString(C.mlp_param_name(C.int(p))) }

// initParams is the Glorot initialisation of the C demo, as Go slices.
func initParams(s shape, seed uint64) [][]float32 {
	params := make([][]float32, numParams)
	ptrs := (*[numParams]*C.float)(C.malloc(C.size_t(numParams) * C.size_t(unsafe.Sizeof((*C.float)(nil)))))
	defer C.free(unsafe.Pointer(ptrs))
	for p := 0; p < numParams; p++ {
		n := 1
		for _, d := range paramShape(s, p) {
			n *= int(d)
		}
		ptrs[p] = (*C.float)(C.calloc(C.size_t(n), 4))
		defer C.free(unsafe.Pointer(ptrs[p]))
		params[p] = make([]float32, n)
	}
	C.mlp_init(s, C.uint64_t(seed), &ptrs[0])
	for p := range params {
		copy(params[p], unsafe.Slice((*float32)(unsafe.Pointer(ptrs[p])), len(params[p])))
	}
	return params
}

// forwardBackward runs the C model on rows examples; params and the features/labels are
// tensor buffers (C memory owned by the library); grads (nil: no backward) too.
func forwardBackward(s shape, params []unsafe.Pointer, x, labels unsafe.Pointer, rows int64, grads []unsafe.Pointer) (lossSum float64, correct int64, err error) {
	cp := (*[numParams]*C.float)(C.malloc(C.size_t(numParams) * C.size_t(unsafe.Sizeof((*C.float)(nil)))))
	defer C.free(unsafe.Pointer(cp))
	for p := 0; p < numParams; p++ {
		cp[p] = (*C.float)(params[p])
	}
	var cg **C.double
	if grads != nil {
		g := (*[numParams]*C.double)(C.malloc(C.size_t(numParams) * C.size_t(unsafe.Sizeof((*C.double)(nil)))))
		defer C.free(unsafe.Pointer(g))
		for p := 0; p < numParams; p++ {
			g[p] = (*C.double)(grads[p])
		}
		cg = &g[0]
	}
	var stats C.mlp_stats_t
	if C.mlp_forward_backward(s, &cp[0], (*C.float)(x), (*C.int32_t)(labels), C.int64_t(rows), cg, &stats) != 0 {
		return 0, 0, fmt.Errorf("mlp_forward_backward: out of memory")
	}
	return float64(stats.loss_sum), int64(stats.correct), nil
}

// writeGlyphs writes count images drawn with seed to path (the C demo's files).
func writeGlyphs(path string, count int64, seed uint64) error {
	p := C.CString(path)
	defer C.free(unsafe.Pointer(p))
	if C.glyphs_write_file(p, C.int64_t(count), C.uint64_t(seed)) != 0 {
		return fmt.Errorf("cannot write %s", path)
	}
	return nil
}

// Package tests is the test suite of the Go binding; cmem.go gives the tests C memory.
package tests

import "unsafe"

/*
#include <stdlib.h>
*/
import "C"

func cMalloc(n int) unsafe.Pointer { return C.malloc(C.size_t(n)) }
func cFree(p unsafe.Pointer)       { C.free(p) }

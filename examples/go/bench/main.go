// Command bench times the Go binding's overhead (not a test): an empty Strategy.Run step
// and an 8-byte all-reduce step (a float64 scalar created, all-reduced and released by
// every replica) on MirroredStrategy with 2 and 4 replicas, next to the same steps written
// in C against the same library in the same process (the C replica functions below).
// "cgo floor" is an empty run whose C replica functions each call an empty exported Go
// function: what any Go callback costs before the binding does anything.
//
//	go run ./bench [-iters 3000] [-rounds 5] [-replicas 2,4]
package main

/*
#cgo pkg-config: distribute
#include <stdint.h>
#include <time.h>
#include "distribute/distribute.h"

static dist_status_t c_empty(dist_context_t* c, const dist_value_t* const* a, int32_t na,
                             dist_value_t** r, int32_t nr, void* ud) {
  (void)c; (void)a; (void)na; (void)r; (void)nr; (void)ud;
  return DIST_OK;
}

static dist_status_t c_allreduce(dist_context_t* c, const dist_value_t* const* a, int32_t na,
                                 dist_value_t** r, int32_t nr, void* ud) {
  const double one = 1.0;
  dist_value_t* x = NULL;
  dist_value_t* y = NULL;
  dist_status_t st;
  (void)a; (void)na; (void)r; (void)nr; (void)ud;
  st = dist_tensor_create(DIST_FLOAT64, NULL, 0, &one, sizeof one, NULL, &x);
  if (st == DIST_OK) st = dist_context_all_reduce(c, DIST_REDUCE_SUM, x, &y);
  dist_value_destroy(y);
  dist_value_destroy(x);
  return st;
}

// The floor of any Go callback: a C replica function that calls an empty exported Go
// function (the Go runtime's cost of entering Go from a library thread, nothing else).
extern void benchNoop(void);
static dist_status_t c_go_noop(dist_context_t* c, const dist_value_t* const* a, int32_t na,
                               dist_value_t** r, int32_t nr, void* ud) {
  (void)c; (void)a; (void)na; (void)r; (void)nr; (void)ud;
  benchNoop();
  return DIST_OK;
}

// ns per step, or -1 on error. allreduce: 0 empty, 1 all-reduce, 2 empty calling Go.
static double c_bench(dist_strategy_t* s, int allreduce, int iters) {
  struct timespec t0, t1;
  dist_replica_fn fn = allreduce == 1 ? c_allreduce : allreduce == 2 ? c_go_noop : c_empty;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < iters; ++i)
    if (dist_strategy_run(s, fn, NULL, NULL, 0, NULL, 0) != DIST_OK) return -1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / iters;
}

static dist_strategy_t* raw(void* p) { return (dist_strategy_t*)p; }
*/
import "C"

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"distribute"
)

//export benchNoop
func benchNoop() {}

func goEmpty(*distribute.ReplicaContext, []*distribute.Value) ([]*distribute.Value, error) {
	return nil, nil
}

func goAllReduce(ctx *distribute.ReplicaContext, _ []*distribute.Value) ([]*distribute.Value, error) {
	x, err := distribute.Scalar(1.0, "")
	if err != nil {
		return nil, err
	}
	y, err := ctx.AllReduce(distribute.Sum, x)
	y.Close()
	x.Close()
	return nil, err
}

func goBench(s *distribute.Strategy, fn distribute.ReplicaFunc, iters int) (float64, error) {
	t0 := time.Now()
	for i := 0; i < iters; i++ {
		if _, err := s.Run(fn, nil, 0); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(t0).Nanoseconds()) / float64(iters), nil
}

// rawPtr is the strategy's C handle, for the C side of the comparison.
func rawPtr(s *distribute.Strategy) *C.dist_strategy_t { return C.raw(s.Handle()) }

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

func main() {
	iters := flag.Int("iters", 3000, "steps per round")
	rounds := flag.Int("rounds", 5, "rounds (the median is printed), C and Go interleaved")
	replicas := flag.String("replicas", "2,4", "replica counts (comma-separated)")
	flag.Parse()
	if err := distribute.SetLogicalCPUDeviceCount(4); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("distribute %s, Go binding vs C through the same library, median of %d rounds x %d steps\n", distribute.Version(), *rounds, *iters)
	fmt.Printf("%-22s %8s %10s %10s %12s %8s %14s\n", "step", "replicas", "C us", "Go us", "Go - C us", "Go / C", "cgo floor us")
	for _, allreduce := range []bool{false, true} {
		for _, field := range strings.Split(*replicas, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(field))
			if err != nil || n < 1 || n > 4 {
				fmt.Fprintf(os.Stderr, "-replicas %q: expected counts from 1 to 4\n", *replicas)
				os.Exit(2)
			}
			devs := make([]string, n)
			for i := range devs {
				devs[i] = fmt.Sprintf("CPU:%d", i)
			}
			s, err := distribute.NewMirroredStrategy(devs, nil)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fn, name, ar := goEmpty, "empty run", C.int(0)
			if allreduce {
				fn, name, ar = goAllReduce, "8-byte all-reduce run", 1
			}
			var cs, gs, fs []float64
			C.c_bench(rawPtr(s), ar, C.int(*iters/10)) // warm up
			if _, err := goBench(s, fn, *iters/10); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			for r := 0; r < *rounds; r++ {
				c := float64(C.c_bench(rawPtr(s), ar, C.int(*iters)))
				g, err := goBench(s, fn, *iters)
				if c < 0 || err != nil {
					fmt.Fprintln(os.Stderr, "bench failed:", err)
					os.Exit(1)
				}
				cs, gs = append(cs, c/1e3), append(gs, g/1e3)
				if !allreduce {
					fs = append(fs, float64(C.c_bench(rawPtr(s), 2, C.int(*iters)))/1e3)
				}
			}
			c, g := median(cs), median(gs)
			floor := "-"
			if !allreduce {
				floor = fmt.Sprintf("%.2f", median(fs))
			}
			fmt.Printf("%-22s %8d %10.2f %10.2f %12.2f %8.2f %14s\n", name, n, c, g, g-c, g/c, floor)
			s.Close()
		}
	}
}

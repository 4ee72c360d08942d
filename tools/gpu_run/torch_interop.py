# A PyTorch CUDA tensor through the library and back, by DLPack (kDLCUDA) without copies:
# dist_tensor_from_dlpack, an all-reduce (SUM) over every GPU replica of MirroredStrategy,
# dist_tensor_to_dlpack, torch.utils.dlpack.from_dlpack. Run by run.sh where python3 has
# torch; $B is the bundle directory. Exits 0 when the result is on the GPU and exact.
import ctypes, os, sys
import torch
import torch.utils.dlpack

lib = ctypes.CDLL(os.path.join(os.environ["B"], "lib", "libdistribute.so.0"))
api = ctypes.pythonapi
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
lib.dist_last_error_message.restype = ctypes.c_char_p
vp = ctypes.c_void_p

def ok(rc, what):
    if rc != 0:
        sys.exit(f"{what}: status {rc}: {lib.dist_last_error_message().decode()}")

n = 1 << 20
t = torch.arange(1, n + 1, dtype=torch.float32, device="cuda") * 0.5
torch.cuda.synchronize()  # legacy DLPack has no stream handshake: the producer's work is done first
cap = torch.utils.dlpack.to_dlpack(t)
managed = api.PyCapsule_GetPointer(cap, b"dltensor")
value = vp()
ok(lib.dist_tensor_from_dlpack(vp(managed), ctypes.byref(value)), "dist_tensor_from_dlpack")
api.PyCapsule_SetName(cap, b"used_dltensor")  # dist owns it now

strategy = vp()
ok(lib.dist_strategy_create_mirrored(None, 0, None, ctypes.byref(strategy)), "create_mirrored")
FN = ctypes.CFUNCTYPE(ctypes.c_int32, vp, vp, ctypes.c_int32, vp, ctypes.c_int32, vp)
exported = []
def replica(ctx, args, nargs, results, nresults, user):
    out = vp()
    rc = lib.dist_context_all_reduce(vp(ctx), 1, value, ctypes.byref(out))  # DIST_REDUCE_SUM
    if rc != 0:
        return rc
    m = vp()
    rc = lib.dist_tensor_to_dlpack(out, ctypes.byref(m))
    lib.dist_value_destroy(out)
    exported.append(m.value)
    return rc
fn = FN(replica)
ok(lib.dist_strategy_run(strategy, fn, None, None, 0, None, 0), "dist_strategy_run")
back = torch.utils.dlpack.from_dlpack(api.PyCapsule_New(exported[0], b"dltensor", None))
reps = len(exported)
expected = t * reps
print(f"torch -> dist -> torch: {reps} replica(s), result on {back.device}, shape {tuple(back.shape)}, "
      f"equal: {torch.equal(back, expected)}, first {back[0].item()} last {back[-1].item()}")
lib.dist_value_destroy(value)
lib.dist_strategy_destroy(strategy)
sys.exit(0 if torch.equal(back, expected) and back.device.type == "cuda" else 1)

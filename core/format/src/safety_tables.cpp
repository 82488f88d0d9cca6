// The safety tables: which globals a pickle may name, and how much each could
// do if Python unpickled the file. This file is data; classifyGlobal() below
// is the only code, and pickle_scan.cpp the only user.
//
// How to read and extend the tables
// - A row's pattern is a full dotted name, "module.name" as a pickle's GLOBAL
//   spells it after the Python 2 aliases below are applied ("__builtin__" ->
//   "builtins"). A pattern ending in ".*" covers the module (or class) and
//   everything below it: "os.*" matches "os.system" and "os.path.join".
// - The most specific row wins: an exact row over any wildcard, a longer
//   wildcard over a shorter one ("torch.serialization._get_layout" is
//   innocuous although "torch.serialization.*" is dangerous).
// - A global no row names is `suspicious` (an opaque object: its class is
//   not ours to vouch for) when it is only constructed (NEWOBJ, copyreg's
//   reconstructors, BUILD) and `dangerous` when a REDUCE, INST or OBJ calls
//   it: an unknown callable may be anything. A suspicious row's global stays
//   suspicious when called (builtins.set([...]), pathlib.PosixPath('a')).
// - builtins.getattr (any spelling the aliases map) is dangerous: it is the
//   gadget of attribute-chain exploits. What getattr(G, "x") reaches (G a
//   global or an __import__ result) is listed and judged as "G.x" too (see
//   pickle_scan.cpp). Only a layout profile (below) lets
//   getattr(C, "MEMBER") through, where C is a class the profile names and
//   C.MEMBER a member it vouches for: how Python >= 3.11 pickles an enum
//   member and protocol 2 a nested class.
// - Add a row with a one-line reason: the CLI shows it, the tests read it.
//
// Layout profiles (kProfiles): the classes one writer pickles into one file
// of its layout, innocuous in that file only (checkpoint_safety.cpp decides
// which file is which). A row ending ".*" covers the members of an enum: one
// more name, no leading underscore (no dunder, no private attribute). Taken
// from what PyTorch's own restricted loaders accept there (torch 2.6's
// DTensor safe globals; the allow-list proposed for DCP's .metadata,
// pytorch#191326) and the writers' add_safe_globals lists (DeepSpeed's
// ZeroStageEnum, LossScaler, fragment_address; Trainer's enums). A row is
// `callable` only when a call is harmless (an enum's value lookup, a path
// built from strings); a data class is vouched for as NEWOBJ + BUILD build
// it: called, its __init__ runs, and the general tables judge it.
//
// innocuous: what torch.load(weights_only=True) accepts (torch 1.13's
//   _get_allowed_globals and 2.x's additions: _rebuild_* functions, storage
//   classes, dtypes, torch.Size, torch.device, OrderedDict, _codecs.encode,
//   bytearray) and numpy's array pieces (_reconstruct, ndarray, dtype,
//   scalar), which 2.x lets through with add_safe_globals.
// suspicious: plain data that is not code: containers of builtins, data
//   classes of training libraries, paths, numpy RNG state, ...
// dangerous: anything that runs code, spawns processes, opens files or
//   sockets, imports modules or calls an arbitrary callable.
#include <algorithm>
#include <string>
#include <vector>

#include "ckpt/format/pickle_safety.h"

namespace ckpt {
namespace {

using L = SafetyLevel;

struct Row {
  std::string_view pattern;
  L level;
  std::string_view why;
};

// Python 2 module names that pickle's fix_imports maps (a subset of
// CPython's _compat_pickle.IMPORT_MAPPING: those that matter here).
struct Alias {
  std::string_view from, to;
};
constexpr Alias kAliases[] = {
    {"__builtin__", "builtins"},
    {"copy_reg", "copyreg"},
    {"commands", "subprocess"},
    {"cPickle", "pickle"},
    {"httplib", "http.client"},
    {"urllib2", "urllib.request"},
    {"SocketServer", "socketserver"},
    {"Queue", "queue"},
    {"cStringIO", "io"},
    {"StringIO", "io"},
    {"UserDict", "collections"},
    {"exceptions", "builtins"},
    {"thread", "_thread"},
    {"dummy_thread", "_dummy_thread"},
    {"repr", "reprlib"},
    {"SimpleHTTPServer", "http.server"},
    {"BaseHTTPServer", "http.server"},
    {"cookielib", "http.cookiejar"},
    {"xmlrpclib", "xmlrpc.client"},
    {"urlparse", "urllib.parse"},
    {"dbm", "dbm"},
};

constexpr Row kRows[] = {
    // ---- innocuous: torch's weights_only allow-list -----------------------
    {"collections.OrderedDict", L::Innocuous, "a state dict's dict"},
    {"torch._utils._rebuild_tensor", L::Innocuous, "rebuilds a tensor"},
    {"torch._utils._rebuild_tensor_v2", L::Innocuous, "rebuilds a tensor"},
    {"torch._utils._rebuild_tensor_v3", L::Innocuous, "rebuilds a tensor"},
    {"torch._utils._rebuild_parameter", L::Innocuous, "rebuilds a parameter"},
    {"torch._utils._rebuild_parameter_with_state", L::Innocuous, "rebuilds a parameter"},
    {"torch._utils._rebuild_qtensor", L::Innocuous, "rebuilds a quantized tensor"},
    {"torch._utils._rebuild_sparse_tensor", L::Innocuous, "rebuilds a sparse tensor"},
    {"torch._utils._rebuild_sparse_csr_tensor", L::Innocuous, "rebuilds a sparse tensor"},
    {"torch._utils._rebuild_nested_tensor", L::Innocuous, "rebuilds a nested tensor"},
    {"torch._utils._rebuild_meta_tensor_no_storage", L::Innocuous, "rebuilds a meta tensor"},
    {"torch._utils._rebuild_device_tensor_from_numpy", L::Innocuous, "rebuilds a tensor"},
    {"torch._utils._rebuild_device_tensor_from_cpu_tensor", L::Innocuous, "rebuilds a tensor"},
    {"torch._utils._rebuild_wrapper_subclass", L::Innocuous, "rebuilds a tensor subclass shell"},
    {"torch._tensor._rebuild_from_type_v2", L::Innocuous, "rebuilds a tensor of a subclass"},
    {"torch._utils._rebuild_from_type_v2", L::Innocuous, "rebuilds a tensor of a subclass"},
    {"torch.serialization._get_layout", L::Innocuous, "a tensor layout"},
    {"torch.nn.parameter.Parameter", L::Innocuous, "the parameter class"},
    {"torch.Tensor", L::Innocuous, "the tensor class"},
    {"torch._tensor.Tensor", L::Innocuous, "the tensor class"},
    {"torch.Size", L::Innocuous, "a shape"},
    {"torch.device", L::Innocuous, "a device"},
    {"torch.strided", L::Innocuous, "a layout"},
    {"torch.sparse_coo", L::Innocuous, "a layout"},
    {"torch.sparse_csr", L::Innocuous, "a layout"},
    {"torch.contiguous_format", L::Innocuous, "a memory format"},
    {"torch.channels_last", L::Innocuous, "a memory format"},
    {"torch.preserve_format", L::Innocuous, "a memory format"},
    {"torch.per_tensor_affine", L::Innocuous, "a quantization scheme"},
    {"torch.per_channel_affine", L::Innocuous, "a quantization scheme"},
    {"torch.per_channel_affine_float_qparams", L::Innocuous, "a quantization scheme"},
    {"_codecs.encode", L::Innocuous, "bytes as latin-1 text (protocol 2)"},
    {"builtins.bytearray", L::Innocuous, "bytes"},
    {"builtins.bytes", L::Innocuous, "bytes (protocol 2)"},
    // Storage classes (torch.<X>Storage, torch.cuda.<X>Storage).
    {"torch.UntypedStorage", L::Innocuous, "a storage"},
    {"torch.TypedStorage", L::Innocuous, "a storage"},
    {"torch.storage.UntypedStorage", L::Innocuous, "a storage"},
    {"torch.storage.TypedStorage", L::Innocuous, "a storage"},
    {"torch.storage._LegacyStorage", L::Innocuous, "a storage"},
    {"torch.DoubleStorage", L::Innocuous, "a storage"},
    {"torch.FloatStorage", L::Innocuous, "a storage"},
    {"torch.HalfStorage", L::Innocuous, "a storage"},
    {"torch.BFloat16Storage", L::Innocuous, "a storage"},
    {"torch.LongStorage", L::Innocuous, "a storage"},
    {"torch.IntStorage", L::Innocuous, "a storage"},
    {"torch.ShortStorage", L::Innocuous, "a storage"},
    {"torch.CharStorage", L::Innocuous, "a storage"},
    {"torch.ByteStorage", L::Innocuous, "a storage"},
    {"torch.BoolStorage", L::Innocuous, "a storage"},
    {"torch.ComplexFloatStorage", L::Innocuous, "a storage"},
    {"torch.ComplexDoubleStorage", L::Innocuous, "a storage"},
    {"torch.QInt8Storage", L::Innocuous, "a storage"},
    {"torch.QUInt8Storage", L::Innocuous, "a storage"},
    {"torch.QInt32Storage", L::Innocuous, "a storage"},
    {"torch.QUInt4x2Storage", L::Innocuous, "a storage"},
    {"torch.QUInt2x4Storage", L::Innocuous, "a storage"},
    {"torch.cuda.DoubleStorage", L::Innocuous, "a storage"},
    {"torch.cuda.FloatStorage", L::Innocuous, "a storage"},
    {"torch.cuda.HalfStorage", L::Innocuous, "a storage"},
    {"torch.cuda.BFloat16Storage", L::Innocuous, "a storage"},
    {"torch.cuda.LongStorage", L::Innocuous, "a storage"},
    {"torch.cuda.IntStorage", L::Innocuous, "a storage"},
    {"torch.cuda.ByteStorage", L::Innocuous, "a storage"},
    {"torch.cuda.BoolStorage", L::Innocuous, "a storage"},
    // dtypes (torch.<name>: every name torch 2.x gives one).
    {"torch.float16", L::Innocuous, "a dtype"},
    {"torch.half", L::Innocuous, "a dtype"},
    {"torch.float32", L::Innocuous, "a dtype"},
    {"torch.float", L::Innocuous, "a dtype"},
    {"torch.float64", L::Innocuous, "a dtype"},
    {"torch.double", L::Innocuous, "a dtype"},
    {"torch.bfloat16", L::Innocuous, "a dtype"},
    {"torch.complex32", L::Innocuous, "a dtype"},
    {"torch.complex64", L::Innocuous, "a dtype"},
    {"torch.complex128", L::Innocuous, "a dtype"},
    {"torch.cfloat", L::Innocuous, "a dtype"},
    {"torch.cdouble", L::Innocuous, "a dtype"},
    {"torch.uint8", L::Innocuous, "a dtype"},
    {"torch.int8", L::Innocuous, "a dtype"},
    {"torch.int16", L::Innocuous, "a dtype"},
    {"torch.short", L::Innocuous, "a dtype"},
    {"torch.int32", L::Innocuous, "a dtype"},
    {"torch.int", L::Innocuous, "a dtype"},
    {"torch.int64", L::Innocuous, "a dtype"},
    {"torch.long", L::Innocuous, "a dtype"},
    {"torch.uint16", L::Innocuous, "a dtype"},
    {"torch.uint32", L::Innocuous, "a dtype"},
    {"torch.uint64", L::Innocuous, "a dtype"},
    {"torch.bool", L::Innocuous, "a dtype"},
    {"torch.qint8", L::Innocuous, "a dtype"},
    {"torch.quint8", L::Innocuous, "a dtype"},
    {"torch.qint32", L::Innocuous, "a dtype"},
    {"torch.quint4x2", L::Innocuous, "a dtype"},
    {"torch.quint2x4", L::Innocuous, "a dtype"},
    {"torch.float8_e4m3fn", L::Innocuous, "a dtype"},
    {"torch.float8_e5m2", L::Innocuous, "a dtype"},
    {"torch.float8_e4m3fnuz", L::Innocuous, "a dtype"},
    {"torch.float8_e5m2fnuz", L::Innocuous, "a dtype"},
    // numpy's array pieces (numpy < 2 spells numpy.core, 2.x numpy._core).
    {"numpy.core.multiarray._reconstruct", L::Innocuous, "rebuilds a numpy array"},
    {"numpy._core.multiarray._reconstruct", L::Innocuous, "rebuilds a numpy array"},
    {"numpy.core.multiarray.scalar", L::Innocuous, "a numpy scalar"},
    {"numpy._core.multiarray.scalar", L::Innocuous, "a numpy scalar"},
    {"numpy.ndarray", L::Innocuous, "the numpy array class"},
    {"numpy.dtype", L::Innocuous, "a numpy dtype"},
    {"numpy.dtypes.*", L::Innocuous, "a numpy dtype class"},
    {"numpy.bool_", L::Innocuous, "a numpy scalar type"},
    {"numpy.float16", L::Innocuous, "a numpy scalar type"},
    {"numpy.float32", L::Innocuous, "a numpy scalar type"},
    {"numpy.float64", L::Innocuous, "a numpy scalar type"},
    {"numpy.int8", L::Innocuous, "a numpy scalar type"},
    {"numpy.int16", L::Innocuous, "a numpy scalar type"},
    {"numpy.int32", L::Innocuous, "a numpy scalar type"},
    {"numpy.int64", L::Innocuous, "a numpy scalar type"},
    {"numpy.uint8", L::Innocuous, "a numpy scalar type"},

    // ---- suspicious: data, but not ours to vouch for -----------------------
    {"builtins.set", L::Suspicious, "a set (builtin data)"},
    {"builtins.frozenset", L::Suspicious, "a frozenset (builtin data)"},
    {"builtins.complex", L::Suspicious, "a complex number (builtin data)"},
    {"builtins.slice", L::Suspicious, "a slice (builtin data)"},
    {"builtins.range", L::Suspicious, "a range (builtin data)"},
    {"builtins.object", L::Suspicious, "the base class of a plain object"},
    {"builtins.int", L::Suspicious, "a builtin type"},
    {"builtins.float", L::Suspicious, "a builtin type"},
    {"builtins.str", L::Suspicious, "a builtin type"},
    {"builtins.bool", L::Suspicious, "a builtin type"},
    {"builtins.list", L::Suspicious, "a builtin type"},
    {"builtins.tuple", L::Suspicious, "a builtin type"},
    {"builtins.dict", L::Suspicious, "a builtin type"},
    {"builtins.type", L::Suspicious, "a builtin type"},
    {"builtins.NoneType", L::Suspicious, "a builtin type"},
    {"copyreg._reconstructor", L::Suspicious, "builds a plain object of a class (protocol 0/1)"},
    {"copyreg.__newobj__", L::Suspicious, "builds a plain object of a class"},
    {"copyreg.__newobj_ex__", L::Suspicious, "builds a plain object of a class"},
    {"collections.Counter", L::Suspicious, "a Counter (data)"},
    {"collections.defaultdict", L::Suspicious,
     "a defaultdict: its factory is called on a missing key"},
    {"collections.deque", L::Suspicious, "a deque (data)"},
    {"collections.namedtuple", L::Dangerous, "builds a class from text (exec)"},
    {"datetime.*", L::Suspicious, "a date or time (data)"},
    {"decimal.Decimal", L::Suspicious, "a decimal number (data)"},
    {"fractions.Fraction", L::Suspicious, "a fraction (data)"},
    {"uuid.UUID", L::Suspicious, "a UUID (data)"},
    {"enum.Enum", L::Suspicious, "an enum class"},
    {"pathlib.Path", L::Suspicious, "a path (data; never opened)"},
    {"pathlib.PosixPath", L::Suspicious, "a path (data; never opened)"},
    {"pathlib.WindowsPath", L::Suspicious, "a path (data; never opened)"},
    {"pathlib.PurePath", L::Suspicious, "a path (data)"},
    {"pathlib.PurePosixPath", L::Suspicious, "a path (data)"},
    {"pathlib.PureWindowsPath", L::Suspicious, "a path (data)"},
    // Python 3.13 pickles paths from pathlib._local.
    {"pathlib._local.PosixPath", L::Suspicious, "a path (data; never opened)"},
    {"pathlib._local.WindowsPath", L::Suspicious, "a path (data; never opened)"},
    {"pathlib._local.Path", L::Suspicious, "a path (data; never opened)"},
    {"argparse.Namespace", L::Suspicious, "command-line options (data)"},
    {"types.SimpleNamespace", L::Suspicious, "a namespace (data)"},
    {"re._compile", L::Suspicious, "a compiled regular expression"},
    {"numpy.random._pickle.__randomstate_ctor", L::Suspicious, "numpy random state"},
    {"numpy.random._pickle.__generator_ctor", L::Suspicious, "numpy random generator state"},
    {"numpy.random._pickle.__bit_generator_ctor", L::Suspicious,
     "numpy random bit generator state"},
    {"numpy.random._mt19937.MT19937", L::Suspicious, "numpy random bit generator"},
    {"numpy.random._pcg64.PCG64", L::Suspicious, "numpy random bit generator"},
    {"numpy.random.mtrand.RandomState", L::Suspicious, "numpy random state"},
    {"numpy.core.multiarray._frombuffer", L::Suspicious, "a numpy array from bytes"},
    {"numpy._core.multiarray._frombuffer", L::Suspicious, "a numpy array from bytes"},
    {"torch.jit._pickle.*", L::Suspicious, "torch::pickle_save's container tags"},
    {"torch.distributed._shard.*", L::Suspicious, "sharded tensor metadata (data)"},
    {"torch.distributed._tensor.*", L::Suspicious, "DTensor metadata (data)"},
    {"torch.distributed.tensor.*", L::Suspicious, "DTensor metadata (data)"},
    {"torch.distributed.device_mesh.DeviceMesh", L::Suspicious, "a DTensor's device mesh (data)"},
    {"torch.distributed.remote_device._remote_device", L::Suspicious,
     "a shard's placement, \"rank:0/cuda:0\" (data)"},
    {"torch.distributed.checkpoint.metadata.*", L::Suspicious,
     "distributed checkpoint metadata (data)"},
    {"torch.distributed.checkpoint.planner.*", L::Suspicious,
     "distributed checkpoint metadata (data)"},
    {"torch.optim.lr_scheduler.*", L::Suspicious, "a scheduler class"},
    {"torch.nn.modules.*", L::Suspicious,
     "a pickled module (class and state; its code is not in the file)"},
    {"torch.cuda.amp.grad_scaler.*", L::Suspicious, "grad scaler state"},
    {"omegaconf.*", L::Suspicious, "an OmegaConf config (data)"},
    {"transformers.training_args.*", L::Suspicious, "Hugging Face training arguments (data)"},
    {"transformers.trainer_utils.*", L::Suspicious, "Hugging Face trainer enums (data)"},
    {"transformers.configuration_utils.PretrainedConfig", L::Suspicious, "a model config (data)"},
    {"accelerate.utils.dataclasses.*", L::Suspicious, "Accelerate settings (data)"},
    {"lightning_fabric.utilities.data.AttributeDict", L::Suspicious,
     "Lightning hyper-parameters (data)"},
    {"pytorch_lightning.utilities.parsing.AttributeDict", L::Suspicious,
     "Lightning hyper-parameters (data)"},
    {"deepspeed.runtime.zero.config.ZeroStageEnum", L::Suspicious, "a DeepSpeed enum (data)"},
    {"deepspeed.runtime.fp16.loss_scaler.*", L::Suspicious, "DeepSpeed loss scaler state"},
    {"deepspeed.utils.tensor_fragment.fragment_address", L::Suspicious,
     "DeepSpeed metadata (data)"},
    {"modern_llm.*", L::Suspicious, "a class of the training library (data)"},

    // ---- dangerous: code, processes, files, network, imports ---------------
    {"builtins.eval", L::Dangerous, "evaluates Python code"},
    {"builtins.exec", L::Dangerous, "runs Python code"},
    {"builtins.execfile", L::Dangerous, "runs a Python file"},
    {"builtins.compile", L::Dangerous, "compiles Python code"},
    {"builtins.getattr", L::Dangerous, "reaches any attribute (a function to call)"},
    {"builtins.setattr", L::Dangerous, "changes any attribute"},
    {"builtins.delattr", L::Dangerous, "changes any attribute"},
    {"builtins.__import__", L::Dangerous, "imports a module"},
    {"builtins.open", L::Dangerous, "opens a file"},
    {"builtins.file", L::Dangerous, "opens a file"},
    {"builtins.input", L::Dangerous, "reads the terminal"},
    {"builtins.breakpoint", L::Dangerous, "starts a debugger"},
    {"builtins.globals", L::Dangerous, "reaches the interpreter's globals"},
    {"builtins.locals", L::Dangerous, "reaches the interpreter's locals"},
    {"builtins.vars", L::Dangerous, "reaches any object's attributes"},
    {"builtins.apply", L::Dangerous, "calls a function"},
    {"builtins.reload", L::Dangerous, "re-imports a module"},
    {"builtins.memoryview", L::Suspicious, "a view of bytes"},
    {"os.*", L::Dangerous, "the operating system: commands, files, environment"},
    {"posix.*", L::Dangerous, "the operating system (os on Unix)"},
    {"nt.*", L::Dangerous, "the operating system (os on Windows)"},
    {"subprocess.*", L::Dangerous, "runs commands"},
    {"sys.*", L::Dangerous, "the interpreter itself"},
    {"socket.*", L::Dangerous, "the network"},
    {"_socket.*", L::Dangerous, "the network"},
    {"ssl.*", L::Dangerous, "the network"},
    {"runpy.*", L::Dangerous, "runs Python modules"},
    {"importlib.*", L::Dangerous, "imports modules"},
    {"imp.*", L::Dangerous, "imports modules"},
    {"pkgutil.*", L::Dangerous, "imports modules"},
    {"zipimport.*", L::Dangerous, "imports modules"},
    {"pickle.*", L::Dangerous, "unpickles more data (with no restriction)"},
    {"_pickle.*", L::Dangerous, "unpickles more data (with no restriction)"},
    {"marshal.*", L::Dangerous, "loads code objects"},
    {"shelve.*", L::Dangerous, "unpickles files"},
    {"dill.*", L::Dangerous, "unpickles code"},
    {"cloudpickle.*", L::Dangerous, "unpickles code"},
    {"joblib.*", L::Dangerous, "unpickles files"},
    {"shutil.*", L::Dangerous, "copies, moves and deletes files"},
    {"tempfile.*", L::Dangerous, "creates files"},
    {"glob.*", L::Dangerous, "lists files"},
    {"io.*", L::Dangerous, "opens files"},
    {"_io.*", L::Dangerous, "opens files"},
    {"codecs.open", L::Dangerous, "opens a file"},
    {"fileinput.*", L::Dangerous, "opens files"},
    {"requests.*", L::Dangerous, "the network"},
    {"urllib.*", L::Dangerous, "the network"},
    {"urllib3.*", L::Dangerous, "the network"},
    {"httplib.*", L::Dangerous, "the network"},
    {"http.*", L::Dangerous, "the network"},
    {"ftplib.*", L::Dangerous, "the network"},
    {"smtplib.*", L::Dangerous, "the network"},
    {"telnetlib.*", L::Dangerous, "the network"},
    {"xmlrpc.*", L::Dangerous, "the network"},
    {"socketserver.*", L::Dangerous, "the network"},
    {"webbrowser.*", L::Dangerous, "opens a browser"},
    {"asyncio.*", L::Dangerous, "processes and the network"},
    {"aiohttp.*", L::Dangerous, "the network"},
    {"code.*", L::Dangerous, "runs Python code"},
    {"codeop.*", L::Dangerous, "compiles Python code"},
    {"pty.*", L::Dangerous, "spawns a shell"},
    {"timeit.*", L::Dangerous, "runs Python code"},
    {"ctypes.*", L::Dangerous, "calls native code"},
    {"_ctypes.*", L::Dangerous, "calls native code"},
    {"cffi.*", L::Dangerous, "calls native code"},
    {"multiprocessing.*", L::Dangerous, "starts processes"},
    {"threading.*", L::Dangerous, "starts threads"},
    {"_thread.*", L::Dangerous, "starts threads"},
    {"signal.*", L::Dangerous, "signals processes"},
    {"pdb.*", L::Dangerous, "starts a debugger"},
    {"bdb.*", L::Dangerous, "starts a debugger"},
    {"pydoc.*", L::Dangerous, "imports and runs modules"},
    {"trace.*", L::Dangerous, "runs Python code"},
    {"profile.*", L::Dangerous, "runs Python code"},
    {"cProfile.*", L::Dangerous, "runs Python code"},
    {"doctest.*", L::Dangerous, "runs Python code"},
    {"unittest.*", L::Dangerous, "runs Python code"},
    {"venv.*", L::Dangerous, "creates environments"},
    {"ensurepip.*", L::Dangerous, "installs packages"},
    {"pip.*", L::Dangerous, "installs packages"},
    {"setuptools.*", L::Dangerous, "runs build code"},
    {"distutils.*", L::Dangerous, "runs build code"},
    {"types.FunctionType", L::Dangerous, "builds a function from a code object"},
    {"types.LambdaType", L::Dangerous, "builds a function from a code object"},
    {"types.CodeType", L::Dangerous, "builds a code object"},
    {"types.MethodType", L::Dangerous, "binds a function to call"},
    {"functools.partial", L::Dangerous, "wraps a callable to call"},
    {"functools.reduce", L::Dangerous, "calls a function"},
    {"operator.attrgetter", L::Dangerous, "reaches any attribute"},
    {"operator.methodcaller", L::Dangerous, "calls any method"},
    {"operator.call", L::Dangerous, "calls a function"},
    {"operator.getitem", L::Suspicious, "indexes a container"},
    {"torch.hub.*", L::Dangerous, "downloads and runs code"},
    {"torch._dynamo.*", L::Dangerous, "compiles and runs code"},
    {"torch._inductor.*", L::Dangerous, "compiles and runs code"},
    {"torch.utils.*", L::Dangerous, "torch utilities (C++ extensions, downloads, data loading)"},
    {"torch.load", L::Dangerous, "loads another file without restriction"},
    {"torch.save", L::Dangerous, "writes a file"},
    {"torch.serialization.*", L::Dangerous, "loads or saves files"},
    {"torch.jit.*", L::Dangerous, "loads and runs TorchScript"},
    {"torch._C.*", L::Dangerous, "torch's native functions"},
    {"torch.ops.*", L::Dangerous, "calls operators"},
    {"torch._ops.*", L::Dangerous, "calls operators"},
    {"torch.classes.*", L::Dangerous, "native classes"},
    {"torch.cuda.*", L::Suspicious, "a CUDA class"},
    {"numpy.testing.*", L::Dangerous, "runs commands and Python code"},
    {"numpy.f2py.*", L::Dangerous, "compiles and runs code"},
    {"numpy.distutils.*", L::Dangerous, "runs build code"},
    {"numpy.load", L::Dangerous, "loads a file (pickles allowed)"},
    {"numpy.lib.npyio.*", L::Dangerous, "loads and saves files"},
    {"numpy.ctypeslib.*", L::Dangerous, "calls native code"},
    {"yaml.*", L::Dangerous, "a YAML loader can build any object"},
    {"builtins.__builtins__", L::Dangerous, "reaches every builtin"},
};

// ---- layout profiles ------------------------------------------------------
struct ProfileRow {
  std::string_view pattern;  // exact, or "Enum.*" for the enum's members
  bool callable;
  std::string_view why;
};
constexpr bool kCall = true, kBuild = false;

constexpr ProfileRow kDcpMetadata[] = {
    {"torch.distributed.checkpoint.metadata.Metadata", kBuild, "DCP's metadata (data)"},
    {"torch.distributed.checkpoint.metadata.TensorStorageMetadata", kBuild,
     "a DCP tensor's shape and chunks (data)"},
    {"torch.distributed.checkpoint.metadata.ChunkStorageMetadata", kBuild,
     "a DCP chunk's offsets and sizes (data)"},
    {"torch.distributed.checkpoint.metadata.BytesStorageMetadata", kBuild,
     "a DCP bytes item (data)"},
    {"torch.distributed.checkpoint.metadata.MetadataIndex", kBuild, "a DCP item's key (data)"},
    {"torch.distributed.checkpoint.metadata.TensorProperties", kBuild,
     "a DCP tensor's dtype and layout (torch's own __setstate__)"},
    {"torch.distributed.checkpoint.metadata.StorageMeta", kBuild, "DCP's checkpoint id (data)"},
    {"torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING", kCall,
     "DCP's memory-format enum"},
    {"torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING.*", kBuild,
     "a member of DCP's memory-format enum"},
    {"torch.distributed.checkpoint.filesystem._StorageInfo", kBuild,
     "where a DCP item's bytes lie (data)"},
    // Older writers: the sharded tensor's classes.
    {"torch.distributed._shard.sharded_tensor.metadata.TensorProperties", kBuild,
     "a tensor's dtype and layout (older DCP)"},
    {"torch.distributed._shard.sharded_tensor.metadata.MEM_FORMAT_ENCODING", kCall,
     "the memory-format enum (older DCP)"},
    {"torch.distributed._shard.sharded_tensor.metadata.MEM_FORMAT_ENCODING.*", kBuild,
     "a member of the memory-format enum (older DCP)"},
    // StorageMeta.checkpoint_id: the folder written to, a pathlib.Path.
    {"pathlib.PosixPath", kCall, "the checkpoint's folder (a path; never opened)"},
    {"pathlib.WindowsPath", kCall, "the checkpoint's folder (a path; never opened)"},
    {"pathlib.Path", kCall, "the checkpoint's folder (a path; never opened)"},
    {"pathlib._local.PosixPath", kCall, "the checkpoint's folder (a path; never opened)"},
    {"pathlib._local.WindowsPath", kCall, "the checkpoint's folder (a path; never opened)"},
};

constexpr ProfileRow kFsdp[] = {
    // ShardedTensor (SHARDED_STATE_DICT). Its __setstate__ is torch's own and
    // needs an initialised process group; nothing of the file's is called.
    {"torch.distributed._shard.sharded_tensor.api.ShardedTensor", kBuild,
     "a sharded tensor (torch's own class)"},
    {"torch.distributed._shard.sharded_tensor.api.ShardedTensor.ProcessGroupState", kBuild,
     "a sharded tensor's ranks (data)"},
    {"torch.distributed._shard.sharded_tensor.shard.Shard", kBuild, "a local shard (data)"},
    {"torch.distributed._shard.metadata.ShardMetadata", kBuild, "a shard's place (data)"},
    {"torch.distributed._shard.sharded_tensor.metadata.ShardedTensorMetadata", kBuild,
     "a sharded tensor's shape (data)"},
    {"torch.distributed._shard.sharded_tensor.metadata.TensorProperties", kBuild,
     "a tensor's dtype and layout (data)"},
    {"torch.distributed._shard.sharded_tensor.metadata.MEM_FORMAT_ENCODING", kCall,
     "the memory-format enum"},
    {"torch.distributed._shard.sharded_tensor.metadata.MEM_FORMAT_ENCODING.*", kBuild,
     "a member of the memory-format enum"},
    {"torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING", kCall, "the memory-format enum"},
    {"torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING.*", kBuild,
     "a member of the memory-format enum"},
    {"torch.distributed._shard.sharding_spec.chunk_sharding_spec.ChunkShardingSpec", kBuild,
     "a sharding spec (data)"},
    {"torch.distributed.remote_device._remote_device", kBuild,
     "a shard's placement, \"rank:0/cuda:0\" (data)"},
    // DTensor: what torch >= 2.6's weights_only loader accepts for it.
    {"torch.distributed.tensor.DTensor", kBuild, "a DTensor (torch's own class)"},
    {"torch.distributed.tensor._api.DTensor", kBuild, "a DTensor (torch's own class)"},
    {"torch.distributed._tensor.api.DTensor", kBuild, "a DTensor (torch's own class)"},
    {"torch.distributed.tensor._dtensor_spec.DTensorSpec", kBuild, "a DTensor's spec (data)"},
    {"torch.distributed.tensor._dtensor_spec.TensorMeta", kBuild, "a DTensor's shape (data)"},
    {"torch.distributed._tensor.placement_types.DTensorSpec", kBuild, "a DTensor's spec (data)"},
    {"torch.distributed._tensor.placement_types.TensorMeta", kBuild, "a DTensor's shape (data)"},
    {"torch.distributed.tensor.placement_types.Shard", kBuild, "a DTensor placement (data)"},
    {"torch.distributed.tensor.placement_types._StridedShard", kBuild,
     "a DTensor placement (data)"},
    {"torch.distributed.tensor.placement_types.Replicate", kBuild, "a DTensor placement (data)"},
    {"torch.distributed.tensor.placement_types.Partial", kBuild, "a DTensor placement (data)"},
    {"torch.distributed._tensor.placement_types.Shard", kBuild, "a DTensor placement (data)"},
    {"torch.distributed._tensor.placement_types.Replicate", kBuild, "a DTensor placement (data)"},
    {"torch.distributed._tensor.placement_types._Partial", kBuild, "a DTensor placement (data)"},
    {"torch.distributed.device_mesh.DeviceMesh", kBuild, "a DTensor's device mesh (data)"},
    {"torch.distributed._tensor.device_mesh.DeviceMesh", kBuild, "a DTensor's device mesh (data)"},
};

constexpr ProfileRow kDeepSpeed[] = {
    {"deepspeed.runtime.zero.config.ZeroStageEnum", kCall, "DeepSpeed's ZeRO stage enum"},
    {"deepspeed.runtime.zero.config.ZeroStageEnum.*", kBuild, "a ZeRO stage"},
    {"deepspeed.runtime.fp16.loss_scaler.LossScaler", kBuild, "DeepSpeed's loss scaler (data)"},
    {"deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler", kBuild,
     "DeepSpeed's loss scaler (data)"},
    {"deepspeed.utils.tensor_fragment.fragment_address", kBuild,
     "where a parameter lies in a flat partition (data)"},
    // The engine saves sparse_tensor_module_names as a set.
    {"builtins.set", kCall, "a set of module names"},
};

constexpr ProfileRow kHfTrainingArgs[] = {
    {"transformers.training_args.TrainingArguments", kBuild, "the Trainer's arguments (data)"},
    {"transformers.training_args_seq2seq.Seq2SeqTrainingArguments", kBuild,
     "the Trainer's arguments (data)"},
    {"transformers.training_args.OptimizerNames", kCall, "an optimizer name enum"},
    {"transformers.training_args.OptimizerNames.*", kBuild, "an optimizer name"},
    {"transformers.trainer_utils.IntervalStrategy", kCall, "a strategy enum"},
    {"transformers.trainer_utils.IntervalStrategy.*", kBuild, "a strategy"},
    {"transformers.trainer_utils.SaveStrategy", kCall, "a strategy enum"},
    {"transformers.trainer_utils.SaveStrategy.*", kBuild, "a strategy"},
    {"transformers.trainer_utils.HubStrategy", kCall, "a strategy enum"},
    {"transformers.trainer_utils.HubStrategy.*", kBuild, "a strategy"},
    {"transformers.trainer_utils.SchedulerType", kCall, "a scheduler name enum"},
    {"transformers.trainer_utils.SchedulerType.*", kBuild, "a scheduler name"},
    {"transformers.trainer_utils.FSDPOption", kCall, "an FSDP option enum"},
    {"transformers.trainer_utils.FSDPOption.*", kBuild, "an FSDP option"},
    {"transformers.debug_utils.DebugOption", kCall, "a debug option enum"},
    {"transformers.debug_utils.DebugOption.*", kBuild, "a debug option"},
    {"transformers.trainer_pt_utils.AcceleratorConfig", kBuild, "Accelerate settings (data)"},
    {"accelerate.state.PartialState", kBuild, "Accelerate's process state (data)"},
    {"accelerate.utils.dataclasses.DistributedType", kCall, "Accelerate's backend enum"},
    {"accelerate.utils.dataclasses.DistributedType.*", kBuild, "an Accelerate backend"},
};

// Megatron-LM's model_optim_rng.pt: `args` is the argparse.Namespace the
// run parsed (megatron/training/checkpointing.py saves it as is), with the
// enums arguments.py and training.py put in it (attention backend, model
// type); the rerun state machine's state (mcore >= 0.10) names its enums;
// Transformer Engine layers keep their _extra_state as io.BytesIO. These
// are what Megatron's own loading scripts pass to add_safe_globals
// (examples/inference/gpt/*: io.BytesIO, RerunState, RerunDiagnostic; the
// Llama and Transformer Engine converters add io.BytesIO the same way) plus
// the Namespace weights_only needs for args.
constexpr ProfileRow kMegatron[] = {
    {"argparse.Namespace", kBuild, "the run's parsed arguments (data)"},
    // io.BytesIO pickles as _io.BytesIO (its __module__), its bytes by _codecs.encode.
    {"_io.BytesIO", kBuild, "a Transformer Engine layer's extra state (bytes)"},
    {"io.BytesIO", kBuild, "a Transformer Engine layer's extra state (bytes)"},
    {"megatron.core.enums.ModelType", kCall, "Megatron's model type enum"},
    {"megatron.core.enums.ModelType.*", kBuild, "a model type"},
    {"megatron.core.transformer.enums.AttnBackend", kCall, "Megatron's attention backend enum"},
    {"megatron.core.transformer.enums.AttnBackend.*", kBuild, "an attention backend"},
    {"megatron.core.rerun_state_machine.RerunState", kCall, "the rerun state machine's enum"},
    {"megatron.core.rerun_state_machine.RerunState.*", kBuild, "a rerun state"},
    {"megatron.core.rerun_state_machine.RerunDiagnostic", kCall, "the rerun state machine's enum"},
    {"megatron.core.rerun_state_machine.RerunDiagnostic.*", kBuild, "a rerun diagnostic"},
    {"megatron.core.rerun_state_machine.RerunMode", kCall, "the rerun state machine's enum"},
    {"megatron.core.rerun_state_machine.RerunMode.*", kBuild, "a rerun mode"},
};

struct Profile {
  SafetyProfile id;
  std::string_view title;
  const ProfileRow* rows;
  size_t count;
};
template <size_t N>
constexpr Profile profile(SafetyProfile id, std::string_view title, const ProfileRow (&rows)[N]) {
  return {id, title, rows, N};
}
constexpr Profile kProfiles[] = {
    profile(SafetyProfile::DcpMetadata, "a DCP checkpoint's metadata", kDcpMetadata),
    profile(SafetyProfile::Fsdp, "an FSDP rank file", kFsdp),
    profile(SafetyProfile::DeepSpeed, "a DeepSpeed checkpoint", kDeepSpeed),
    profile(SafetyProfile::HfTrainingArgs, "a Hugging Face Trainer's training_args.bin",
            kHfTrainingArgs),
    profile(SafetyProfile::Megatron, "a Megatron-LM checkpoint file", kMegatron),
};

const Profile* findProfile(SafetyProfile id) {
  for (const Profile& p : kProfiles)
    if (p.id == id) return &p;
  return nullptr;
}

// The row of `profile` that vouches for `full`: exact, or "C.*" for a
// member "C.NAME" (NAME one more part, not starting with '_').
const ProfileRow* findProfileRow(const Profile& profile, std::string_view full) {
  const size_t dot = full.rfind('.');
  const bool member =
      dot != std::string_view::npos && dot + 1 < full.size() && full[dot + 1] != '_';
  for (size_t i = 0; i < profile.count; ++i) {
    const std::string_view p = profile.rows[i].pattern;
    if (p.ends_with(".*")) {
      if (member && p.substr(0, p.size() - 2) == full.substr(0, dot)) return &profile.rows[i];
    } else if (p == full) {
      return &profile.rows[i];
    }
  }
  return nullptr;
}

// Sorted once: the tables are small, but the scan asks for every GLOBAL.
struct Index {
  std::vector<const Row*> exact;     // by pattern
  std::vector<const Row*> wildcard;  // by prefix (pattern without the '*')
  Index() {
    for (const Row& r : kRows) (r.pattern.ends_with(".*") ? wildcard : exact).push_back(&r);
    auto byPattern = [](const Row* a, const Row* b) { return a->pattern < b->pattern; };
    std::sort(exact.begin(), exact.end(), byPattern);
    std::sort(wildcard.begin(), wildcard.end(), byPattern);
  }
};

const Index& index() {
  static const Index i;
  return i;
}

const Row* findExact(std::string_view full) {
  const auto& v = index().exact;
  auto it = std::lower_bound(v.begin(), v.end(), full,
                             [](const Row* r, std::string_view s) { return r->pattern < s; });
  return it != v.end() && (*it)->pattern == full ? *it : nullptr;
}

// The longest "a.b.*" whose "a.b" is `full` or a dotted prefix of it.
const Row* findWildcard(std::string_view full) {
  const auto& v = index().wildcard;
  for (size_t end = full.size();;) {
    const std::string_view prefix = full.substr(0, end);
    for (const Row* r : v) {  // few rows: a scan keeps the data easy to read
      const std::string_view p = r->pattern.substr(0, r->pattern.size() - 2);
      if (p == prefix) return r;
    }
    const size_t dot = prefix.rfind('.');
    if (dot == std::string_view::npos) return nullptr;
    end = dot;
  }
}

}  // namespace

std::string_view safetyLevelName(SafetyLevel l) {
  switch (l) {
    case SafetyLevel::Innocuous:
      return "innocuous";
    case SafetyLevel::Suspicious:
      return "suspicious";
    case SafetyLevel::Dangerous:
      return "dangerous";
  }
  return "?";
}

std::string_view safetyProfileTitle(SafetyProfile p) {
  const Profile* profile = findProfile(p);
  return profile ? profile->title : std::string_view();
}

std::string canonicalGlobal(std::string_view module, std::string_view name) {
  // Python 2 aliases map the top-level package.
  std::string full(module);
  const size_t dot = module.find('.');
  const std::string_view top = module.substr(0, dot);
  for (const Alias& a : kAliases)
    if (a.from == top) {
      full =
          std::string(a.to) + std::string(dot == std::string_view::npos ? "" : module.substr(dot));
      break;
    }
  full += '.';
  full += name;
  return full;
}

GlobalLevel classifyGlobal(std::string_view module, std::string_view name, SafetyProfile profile) {
  const std::string full = canonicalGlobal(module, name);
  if (const Profile* p = findProfile(profile))
    if (const ProfileRow* r = findProfileRow(*p, full))
      return {SafetyLevel::Innocuous, true, r->why, /*profiled=*/true, r->callable};
  if (const Row* r = findExact(full)) return {r->level, true, r->why};
  if (const Row* r = findWildcard(full)) return {r->level, true, r->why};
  return {SafetyLevel::Suspicious, false, {}};
}

}  // namespace ckpt

# Generates C headers from src/api/cuda_api.def (see that file for the format).
#   awk -v what=prototypes -f gen-cuda-api.awk cuda_api.def > cuda_api.h
#   awk -v what=proctable  -f gen-cuda-api.awk cuda_api.def > cuda_proc_table.h
#   awk -v what=abi        -f gen-cuda-api.awk cuda_api.def > abi_prototypes.h
#   awk -v what=names      -f gen-cuda-api.awk cuda_api.def > abi_names.h
# Any malformed line stops the build: a silently dropped entry would be a missing export.

function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
function fail(msg) { printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"; failed = 1; exit 1 }

BEGIN {
    FS = "|"
    if (what != "prototypes" && what != "proctable" && what != "abi" && what != "names") {
        print "gen-cuda-api.awk: set -v what=prototypes|proctable|abi|names" > "/dev/stderr"; failed = 1; exit 1
    }
    if (what == "prototypes") {
        print "/* Generated from src/api/cuda_api.def by scripts/gen-cuda-api.awk. Do not edit. */"
        print "#ifndef VGPU_GEN_CUDA_API_H"
        print "#define VGPU_GEN_CUDA_API_H"
        print "#include \"cuda_types.h\""
        print "#ifndef VGPU_EXPORT"
        print "#define VGPU_EXPORT __attribute__((visibility(\"default\")))"
        print "#endif"
    } else if (what == "proctable") {
        print "/* Generated from src/api/cuda_api.def by scripts/gen-cuda-api.awk. Do not edit."
        print " * VGPU_PROC(base, version, per_thread, symbol): a variant the mock exports."
        print " * VGPU_PROC_LEGACY(base, version, per_thread): a variant that exists in NVIDIA's driver but not here. */"
    } else if (what == "abi") {
        print "/* Generated from src/api/cuda_api.def by scripts/gen-cuda-api.awk. Do not edit."
        print " * VGPU_ABI_PROTO(symbol, pfn_typedef, parameter_list) */"
    } else {
        print "/* Generated from src/api/cuda_api.def by scripts/gen-cuda-api.awk. Do not edit."
        print " * VGPU_ABI_NAME(base): one line per base name, for checking cuda.h's name macros. */"
    }
}

/^[ \t]*#/ || /^[ \t]*$/ { next }

{
    if (NF != 5) fail("expected 5 fields separated by '|', got " NF)
    symbol = trim($1); base = trim($2); version = trim($3); stream = trim($4); params = trim($5)
    if (base !~ /^cu[A-Za-z0-9_]+$/) fail("bad base name '" base "'")
    if (version !~ /^[0-9]+$/) fail("bad version '" version "'")
    if (stream != "-" && stream != "ptds" && stream != "ptsz") fail("bad stream column '" stream "'")
    per_thread = (stream == "-") ? 0 : 1
    pfn = "PFN_" base "_v" version ((stream == "-") ? "" : "_" stream)
    key = base SUBSEP version SUBSEP stream
    if (key in seen) fail("duplicate variant " base " " version " " stream)
    seen[key] = 1
    if (what == "names" && !(base in bases)) { bases[base] = 1; printf "VGPU_ABI_NAME(%s)\n", base }

    if (symbol == "-") {
        if (what == "proctable") printf "VGPU_PROC_LEGACY(\"%s\", %d, %d)\n", base, version, per_thread
        next
    }
    if (symbol !~ /^cu[A-Za-z0-9_]+$/) fail("bad symbol '" symbol "'")
    if (params == "alias") { # another base name the driver resolves to a symbol exported above
        if (!(symbol in exported)) fail("alias of a symbol not exported above: " symbol)
        if (what == "proctable") printf "VGPU_PROC(\"%s\", %d, %d, %s)\n", base, version, per_thread, symbol
        next
    }
    if (symbol in exported) fail("symbol exported twice: " symbol)
    exported[symbol] = 1
    if (what == "prototypes") printf "VGPU_EXPORT CUresult %s(%s);\n", symbol, params
    else if (what == "proctable") printf "VGPU_PROC(\"%s\", %d, %d, %s)\n", base, version, per_thread, symbol
    else if (what == "abi") printf "VGPU_ABI_PROTO(%s, %s, (%s))\n", symbol, pfn, params
}

END {
    if (failed) exit 1
    if (what == "prototypes") print "#endif"
}

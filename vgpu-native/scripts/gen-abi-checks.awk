# Reads src/include/cuda_types.h (written in the restricted layout its header comment describes) and
# generates the pieces of the ABI test that compares it with NVIDIA's cuda.h:
#   -v what=rename    #define NAME vgpu_abi_NAME for every type, tag and enumerator we declare
#   -v what=unrename  the matching #undef lines
#   -v what=checks    VGPU_ABI_ENUM / VGPU_ABI_SIZE / VGPU_ABI_FIELD / VGPU_ABI_SCALAR lines
# The test includes cuda.h first, then our header under the renames, so both sets of names coexist.

function add_name(n) { if (!(n in named)) { named[n] = 1; names[++name_count] = n } }
function emit(line) { checks[++check_count] = line }
function field_name(line,    s) {
    s = line
    sub(/;.*$/, "", s)
    gsub(/\[[^]]*\]/, "", s)
    sub(/[ \t]+$/, "", s)
    if (match(s, /[A-Za-z_][A-Za-z_0-9]*$/)) return substr(s, RSTART, RLENGTH)
    return ""
}

BEGIN { depth = 0; kind = "" }

# typedef struct TAG *NAME;  /  typedef struct TAG NAME;  (no body)
/^typedef (struct|union) [A-Za-z_0-9]+ \*?[A-Za-z_0-9]+;/ {
    line = $0; gsub(/[*;]/, " ", line); split(line, w, /[ \t]+/)
    add_name(w[3]); add_name(w[4])
    next
}
# typedef <scalar type> NAME;
/^typedef [^{(]*[A-Za-z_0-9]+;/ && $0 !~ /^typedef (struct|union|enum) / {
    line = $0; sub(/;.*$/, "", line); n = split(line, w, /[ \t]+/)
    add_name(w[n]); emit("VGPU_ABI_SCALAR(" w[n] ")")
    next
}
# typedef enum|struct|union TAG {
/^typedef (enum|struct|union) [A-Za-z_0-9]+ \{/ {
    kind = $2; tag = $3; add_name(tag); depth = 1; prefix = ""; nfields = 0
    next
}
depth >= 1 && kind == "enum" && /^[ \t]+[A-Za-z_][A-Za-z_0-9]* = / {
    n = $1; add_name(n); emit("VGPU_ABI_ENUM(" n ")")
    next
}
depth == 1 && (kind == "struct" || kind == "union") && /^[ \t]+(struct|union) \{/ {
    depth = 2; nested_first = nfields + 1
    next
}
depth == 2 && /^[ \t]+\} [A-Za-z_0-9]+;/ {
    member = $2; sub(/;.*/, "", member)
    fields[++nfields] = member
    for (i = nested_first; i < nfields; i++) fields[i] = member "." fields[i]
    depth = 1
    next
}
depth >= 1 && (kind == "struct" || kind == "union") && /;[ \t]*$/ && $0 !~ /^\}/ {
    f = field_name($0); if (f != "") fields[++nfields] = f
    next
}
depth == 1 && /^\} [A-Za-z_0-9]+;/ {
    tname = $2; sub(/;.*/, "", tname); add_name(tname)
    emit("VGPU_ABI_SIZE(" tname ")")
    for (i = 1; i <= nfields; i++) emit("VGPU_ABI_FIELD(" tname ", " fields[i] ")")
    depth = 0; kind = ""
    next
}

END {
    if (depth != 0) { print "gen-abi-checks.awk: unterminated type block" > "/dev/stderr"; exit 1 }
    print "/* Generated from src/include/cuda_types.h by scripts/gen-abi-checks.awk. Do not edit. */"
    if (what == "rename") for (i = 1; i <= name_count; i++) printf "#define %s vgpu_abi_%s\n", names[i], names[i]
    else if (what == "unrename") for (i = 1; i <= name_count; i++) printf "#undef %s\n", names[i]
    else if (what == "checks") for (i = 1; i <= check_count; i++) print checks[i]
    else { print "gen-abi-checks.awk: set -v what=rename|unrename|checks" > "/dev/stderr"; exit 1 }
}

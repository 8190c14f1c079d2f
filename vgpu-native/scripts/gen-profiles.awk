# Turns vgpu-mock's profiles.csv (the single source of truth for mock GPU profiles; its header comment
# defines the format) into a C table for the mock libcuda.so.1 and libnvidia-ml.so.1.
#   awk -f gen-profiles.awk profiles.csv > mock_profiles.h
# The build fails on any line it cannot read: a profile the Java side knows but C silently lacks
# would make the two mocks disagree.

function fail(msg) { printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"; failed = 1; exit 1 }
function cstring(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }

BEGIN {
    FS = ","
    expected = "profile,name,memoryMiB,computeCapability,multiprocessors,maxThreadsPerMultiprocessor,architecture,pciDeviceId"
}

/^[ \t]*#/ || /^[ \t]*$/ { next }

!header_seen {
    line = $0; sub(/\r$/, "", line)
    if (line != expected) fail("unexpected header; expected: " expected)
    header_seen = 1
    next
}

{
    sub(/\r$/, "")
    if (NF != 8) fail("expected 8 fields, got " NF)
    if ($1 !~ /^[A-Za-z0-9][A-Za-z0-9._-]*$/) fail("bad profile key '" $1 "'")
    if ($1 in keys) fail("duplicate profile '" $1 "'")
    keys[$1] = 1
    if ($3 !~ /^[0-9]+$/ || $3 + 0 == 0) fail("bad memoryMiB '" $3 "'")
    if ($4 !~ /^[0-9]+\.[0-9]+$/) fail("bad computeCapability '" $4 "'")
    if ($5 !~ /^[0-9]+$/ || $5 + 0 == 0) fail("bad multiprocessors '" $5 "'")
    if ($6 !~ /^[0-9]+$/ || $6 + 0 == 0) fail("bad maxThreadsPerMultiprocessor '" $6 "'")
    if ($7 !~ /^[a-z]+$/) fail("bad architecture '" $7 "'")
    if ($8 !~ /^0x[0-9A-Fa-f]+$/ || length($8) != 10) fail("bad pciDeviceId '" $8 "'")
    split($4, cc, ".")
    rows[++count] = sprintf("    {%s, %s, %sULL, %d, %d, %d, %d, %s, %su},", cstring($1), cstring($2), $3, cc[1], cc[2], $5, $6, cstring($7), $8)
}

END {
    if (failed) exit 1
    if (!header_seen || count == 0) { print "gen-profiles.awk: no profiles found" > "/dev/stderr"; exit 1 }
    print "/* Generated from vgpu-mock/src/main/resources/io/vgpu/mock/profiles.csv by scripts/gen-profiles.awk. Do not edit. */"
    print "#ifndef VGPU_GEN_MOCK_PROFILES_H"
    print "#define VGPU_GEN_MOCK_PROFILES_H"
    print "#include \"mock/profiles.h\""
    print "static const struct mock_profile MOCK_PROFILES[] = {"
    for (i = 1; i <= count; i++) print rows[i]
    print "};"
    printf "#define MOCK_PROFILE_COUNT %d\n", count
    print "#endif"
}

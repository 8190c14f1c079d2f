/* vgpu-conformance <check> [argument]: runs one check (exit 0 = pass) or a helper role of one.
 * run-conformance.sh sets the environment of each check and prints the results. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "checks.h"

static const struct check CHECKS[] = {
    {"over-limit-oom", check_over_limit},
    {"exact-boundary", check_exact_boundary},
    {"meminfo-reports-limit", check_meminfo_reports_limit},
    {"null-outputs", check_null_outputs},
    {"allocation-apis-counted", check_allocation_apis},
    {"free-paths", check_free_paths},
    {"usage-above-limit-no-underflow", check_usage_above_limit},
    {"race-4x8", check_race},
    {"sigkill-reclaim", check_kill_reclaim},
    {"visible-index-physical", check_visible_physical},
    {"visible-devices-uuid", check_visible_uuid},
    {"procaddr-same-limits", check_procaddr},
    {"dlopen-dlsym-enforced", check_dlsym},
    {"rtld-next-preserved", check_rtld_next},
    {"limits-file", check_limits_file},
    {"limits-file-without-env", check_limits_file_without_env},
    {"malformed-limit-fails-cuinit", check_malformed_limits},
    {"region-unavailable-no-exit", check_region_unavailable},
    {"no-system-calls", check_no_system_calls},
    {"nvml-identity", check_nvml_identity},
    {"profiles-match-csv", check_profiles_match_csv},
    {"nvml-memory-processes", check_nvml_memory_and_processes},
    {"nvml-utilization", check_nvml_utilization},
    {"nvml-xid-lost", check_nvml_failures},
    {"mock-lazy-memory", check_mock_lazy_memory},
    {"mock-virtual-clock", check_mock_virtual_clock},
    {"mock-driver-surface", check_mock_driver_surface},
    {"mock-reference-kernels", check_mock_reference_kernels},
    {"mock-kernel-variation", check_mock_kernel_variation},
    {"mock-kernel-config", check_mock_kernel_config},
    {"sm-limit", check_sm_limit},
    {"probe-ops", check_probe_ops},
    {"probe-malformed-ops", check_probe_malformed},
    {"probe-limits", check_probe_limits},
    {"probe-physical-index", check_probe_physical_index},
    {"probe-killed-child", check_probe_killed_child},
    {"probe-spawn", check_probe_spawn},
    {"probe-escape", check_probe_escape},
    {"probe-compute", check_probe_compute},
    {"overhead-alloc-free", check_overhead_alloc},
    {"overhead-launch", check_overhead_launch},
    {"overhead-launch-limited", check_overhead_launch_limited},
    {"region-rewrite-whole-file", check_region_rewrite_whole},
    {"region-rewrite-used-words", check_region_rewrite_used},
    {"region-rewrite-limit-words", check_region_rewrite_limits},
    {"region-rewrite-compute-switch", check_region_rewrite_switch},
    {"region-rewrite-compute-pacer", check_region_rewrite_pacer},
    {"limits-file-refused", check_limits_file_refused},
    {"partial-nvml", check_partial_nvml},
    {"fork-while-locked", check_fork_while_locked},
    {"mock-graphs", check_mock_graphs},
    {"graph-launch-paced", check_graph_launch_paced},
    {"graph-memory-counted", check_graph_memory},
    {"free-async-when-done", check_free_async},
    {"launch-wait-bounded", check_launch_wait_bounded},
    {"region-symlink-refused", check_region_symlink_refused},
    {"region-hard-link-refused", check_region_hard_link_refused},
    {"region-not-regular-refused", check_region_not_regular_refused},
    {"region-foreign-owner-refused", check_region_foreign_owner_refused},
    {"region-wrong-size-refused", check_region_wrong_size_refused},
    {"region-created-and-shared", check_region_created_and_shared},
    {"devices-by-uuid", check_devices_by_uuid},
    {"devices-unlisted-refused", check_devices_unlisted_refused},
    {"devices-malformed", check_devices_malformed},
    {"grant-wait-timeout", check_grant_wait_timeout},
    {"grant-arrives-during-wait", check_grant_arrives},
    {"env-contract-kai", check_env_contract_kai},
    {"race-worker", role_race_worker},
    {"kill-holder", role_kill_holder},
    {"process-holder", role_process_holder},
    {"busy-half-second", role_busy_half_second},
    {"sm-limited", role_sm_limited},
    {"sm-competitor", role_sm_competitor},
    {"bench-alloc", role_bench_alloc},
    {"bench-launch", role_bench_launch},
    {"bench-launch-limited", role_bench_launch_limited},
    {"gpu-throughput", role_gpu_throughput},
    {"grant-report", role_grant_report},
    {"kernel-sequence", role_kernel_sequence},
    {"kernel-config", role_kernel_config},
    {"region-newcomer", role_region_newcomer},
    {"fork-in-once", role_fork_in_once},
    {"device-view", role_device_view},
    {"graph-launcher", role_graph_launcher},
};

int main(int argc, char **argv) {
    if (argc >= 2)
        for (unsigned i = 0; i < sizeof CHECKS / sizeof CHECKS[0]; i++)
            if (strcmp(argv[1], CHECKS[i].name) == 0) return CHECKS[i].run(argc, argv);
    fprintf(stderr, "usage: %s <check> [argument]; checks:", argc > 0 ? argv[0] : "vgpu-conformance");
    for (unsigned i = 0; i < sizeof CHECKS / sizeof CHECKS[0]; i++) fprintf(stderr, " %s", CHECKS[i].name);
    fputc('\n', stderr);
    return 2;
}

/* Every check and helper role of the conformance program. */
#ifndef VGPU_TEST_CHECKS_H
#define VGPU_TEST_CHECKS_H

int check_over_limit(int argc, char **argv);
int check_exact_boundary(int argc, char **argv);
int check_meminfo_reports_limit(int argc, char **argv);
int check_null_outputs(int argc, char **argv);
int check_allocation_apis(int argc, char **argv);
int check_free_paths(int argc, char **argv);
int check_usage_above_limit(int argc, char **argv);
int check_race(int argc, char **argv);
int check_kill_reclaim(int argc, char **argv);
int check_visible_physical(int argc, char **argv);
int check_visible_uuid(int argc, char **argv);
int check_procaddr(int argc, char **argv);
int check_dlsym(int argc, char **argv);
int check_rtld_next(int argc, char **argv);
int check_limits_file(int argc, char **argv);
int check_limits_file_without_env(int argc, char **argv);
int check_malformed_limits(int argc, char **argv);
int check_region_unavailable(int argc, char **argv);
int check_no_system_calls(int argc, char **argv);
int check_nvml_identity(int argc, char **argv);
int check_profiles_match_csv(int argc, char **argv);
int check_nvml_memory_and_processes(int argc, char **argv);
int check_nvml_utilization(int argc, char **argv);
int check_nvml_failures(int argc, char **argv);
int check_mock_lazy_memory(int argc, char **argv);
int check_mock_virtual_clock(int argc, char **argv);
int check_mock_driver_surface(int argc, char **argv);
int check_mock_reference_kernels(int argc, char **argv);
int check_mock_kernel_variation(int argc, char **argv);
int check_mock_kernel_config(int argc, char **argv);
int check_sm_limit(int argc, char **argv);
int check_probe_ops(int argc, char **argv);
int check_probe_malformed(int argc, char **argv);
int check_probe_limits(int argc, char **argv);
int check_probe_physical_index(int argc, char **argv);
int check_probe_killed_child(int argc, char **argv);
int check_probe_spawn(int argc, char **argv);
int check_probe_escape(int argc, char **argv);
int check_probe_compute(int argc, char **argv);
int check_overhead_alloc(int argc, char **argv);
int check_overhead_launch(int argc, char **argv);
int check_overhead_launch_limited(int argc, char **argv);
int check_region_rewrite_whole(int argc, char **argv);
int check_region_rewrite_used(int argc, char **argv);
int check_region_rewrite_limits(int argc, char **argv);
int check_region_rewrite_switch(int argc, char **argv);
int check_region_rewrite_pacer(int argc, char **argv);
int check_limits_file_refused(int argc, char **argv);
int check_partial_nvml(int argc, char **argv);
int check_fork_while_locked(int argc, char **argv);
int check_mock_graphs(int argc, char **argv);
int check_graph_launch_paced(int argc, char **argv);
int check_graph_memory(int argc, char **argv);
int check_free_async(int argc, char **argv);
int check_launch_wait_bounded(int argc, char **argv);

int role_race_worker(int argc, char **argv);
int role_kill_holder(int argc, char **argv);
int role_process_holder(int argc, char **argv);
int role_busy_half_second(int argc, char **argv);
int role_sm_limited(int argc, char **argv);
int role_sm_competitor(int argc, char **argv);
int role_bench_alloc(int argc, char **argv);
int role_bench_launch(int argc, char **argv);
int role_bench_launch_limited(int argc, char **argv);
int role_gpu_throughput(int argc, char **argv);
int role_grant_report(int argc, char **argv);
int role_kernel_sequence(int argc, char **argv);
int role_kernel_config(int argc, char **argv);
int role_region_newcomer(int argc, char **argv);
int role_fork_in_once(int argc, char **argv);
int role_graph_launcher(int argc, char **argv);

#endif

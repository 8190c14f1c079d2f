/**
 * The node agent's memory watchdog: NVML's per-process accounting mapped to pods and containers by
 * cgroup, held to each container's grant, with a kill or a report for a container over it.
 */
@NullMarked
package io.vgpu.k8s.watchdog;

import org.jspecify.annotations.NullMarked;

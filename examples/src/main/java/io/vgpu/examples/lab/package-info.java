/**
 * {@code vgpu lab}: the whole system on one machine (LAB.md). The real {@code vgpu scheduler} and
 * {@code vgpu device-plugin} run as processes; only what cannot run here has a stand-in — the API server
 * ({@link io.vgpu.examples.lab.apiserver}), kube-scheduler ({@link io.vgpu.examples.lab.kubescheduler})
 * and kubelet with its container runtime ({@link io.vgpu.examples.lab.kubelet}); GPUs are vgpu-native's
 * mock driver. Nothing deployable depends on this package.
 */
@NullMarked
package io.vgpu.examples.lab;

import org.jspecify.annotations.NullMarked;

/**
 * kube-scheduler's own rules, where vgpu's tools have to play its part without it: which nodes a
 * scheduling cycle looks at before it hands its feasible nodes to the extender.
 */
@NullMarked
package io.vgpu.k8s.kubescheduler;

import org.jspecify.annotations.NullMarked;

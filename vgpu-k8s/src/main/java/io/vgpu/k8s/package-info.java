/**
 * The engine assembled for Kubernetes: HAMi's wire formats, admission, the scheduler extender, the device plugin and the command line.
 */
@NullMarked
package io.vgpu.k8s;

import org.jspecify.annotations.NullMarked;

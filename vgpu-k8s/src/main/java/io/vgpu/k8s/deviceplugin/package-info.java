/**
 * The node agent: the kubelet device plugin (API v1beta1 over gRPC on a unix socket), the node's
 * registration for the scheduler, the interposer installed on the host, and the node monitor.
 */
@NullMarked
package io.vgpu.k8s.deviceplugin;

import org.jspecify.annotations.NullMarked;

/**
 * The scheduler's decision made tamper-evident: the grant a pod was given is signed by the scheduler
 * with a key kept in a Secret that tenants cannot read, and the node agent serves a grant to kubelet,
 * and the watchdog holds a container to one, only when the signature matches the pod, its node and
 * its cards. A pod annotation that anybody edited afterwards is no grant at all.
 */
@NullMarked
package io.vgpu.k8s.grant;

import org.jspecify.annotations.NullMarked;

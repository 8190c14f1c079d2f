/**
 * The scheduler pod's certificates when no cert-manager makes them: a serving certificate and the CA
 * that signed it, kept in a Secret so that every replica and restart serves the same one, the CA
 * written into the admission webhook's {@code caBundle}, and kube-scheduler's client certificate for
 * the extender, made afresh by a CA that never leaves the pod.
 */
@NullMarked
package io.vgpu.k8s.certificates;

import org.jspecify.annotations.NullMarked;

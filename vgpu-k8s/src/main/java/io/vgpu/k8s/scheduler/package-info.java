/**
 * The scheduler extender: kube-scheduler's filter and bind verbs over HTTP(S), the admission webhook
 * beside them, the ledger kept in step with the cluster through informers, node locks, leadership and
 * metrics.
 */
@NullMarked
package io.vgpu.k8s.scheduler;

import org.jspecify.annotations.NullMarked;

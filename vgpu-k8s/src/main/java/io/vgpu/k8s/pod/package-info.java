/**
 * What a Kubernetes Pod asks of the GPU scheduler: quantities, container requests, annotations that
 * constrain devices or choose policies, and the node selection rules the scheduler honours.
 */
@NullMarked
package io.vgpu.k8s.pod;

import org.jspecify.annotations.NullMarked;

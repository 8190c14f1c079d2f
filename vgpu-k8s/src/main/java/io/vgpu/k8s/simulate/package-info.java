/**
 * {@code vgpu simulate}: scenario files (a cluster with GPUs and a sequence of pod events) replayed
 * through admission, the engine and the annotation codecs, without an API server.
 */
@NullMarked
package io.vgpu.k8s.simulate;

import org.jspecify.annotations.NullMarked;

/**
 * YAML and JSON input read into a tree that remembers where every value came from, so that bad input
 * is reported as one line naming the field, the value and {@code file:line:column}.
 */
@NullMarked
package io.vgpu.k8s.yaml;

import org.jspecify.annotations.NullMarked;

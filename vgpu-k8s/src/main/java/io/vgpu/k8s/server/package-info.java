/**
 * HTTP plumbing shared by vgpu's servers: TLS material read from PEM files and reloaded when they
 * change, request-size limits and one-line JSON errors.
 */
@NullMarked
package io.vgpu.k8s.server;

import org.jspecify.annotations.NullMarked;

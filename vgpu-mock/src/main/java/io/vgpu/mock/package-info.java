/**
 * Fake GPUs described by profiles, served as a DeviceSource so that everything runs without a GPU.
 */
@NullMarked
package io.vgpu.mock;

import org.jspecify.annotations.NullMarked;

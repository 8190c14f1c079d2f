/**
 * HAMi's wire formats, one codec class per annotation family: the device lists of {@code
 * hami.io/vgpu-devices-allocated} and {@code -to-allocate}, the {@code hami.io/node-nvidia-register}
 * JSON, the scheduler's reason strings and the node lock value.
 */
@NullMarked
package io.vgpu.k8s.codec;

import org.jspecify.annotations.NullMarked;

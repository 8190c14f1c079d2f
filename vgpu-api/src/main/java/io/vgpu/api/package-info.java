/**
 * The public value types and SPIs of vgpu: devices, requests, grants, reasons, and the plug-in points (device sources, resource schemas, placement policies, container contracts).
 */
@NullMarked
package io.vgpu.api;

import org.jspecify.annotations.NullMarked;

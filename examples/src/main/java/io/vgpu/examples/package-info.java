/**
 * Examples of embedding the vgpu engine in another scheduler.
 */
package io.vgpu.examples;

/**
 * Examples of embedding the vgpu engine in another scheduler; the lab ({@code vgpu lab}) lives in
 * {@link io.vgpu.examples.lab}.
 */
package io.vgpu.examples;

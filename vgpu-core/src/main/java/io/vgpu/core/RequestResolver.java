package io.vgpu.core;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.ResourceSchema;
import io.vgpu.api.spi.CardDemand;
import org.jspecify.annotations.Nullable;

/**
 * Turns what a container asks for into what it needs from each card, applying the schema's factor
 * and defaults exactly as HAMi does: {@code gpumem} times the memory factor; a percentage above 100
 * clamped to 100 and one of 0 or less ignored; with neither memory nor percentage, the default memory,
 * or else the whole card; the default compute share when none is asked; a compute share above 100
 * clamped to 100. A card portion (KAI Scheduler's {@code gpu-fraction} or {@code gpu-memory}) is kept as
 * it is: its memory is a function of each card, resolved when a card is tried.
 */
public final class RequestResolver {
  private final ResourceSchema schema;

  /** A resolver for one vendor's schema. */
  public RequestResolver(ResourceSchema schema) {
    this.schema = schema;
  }

  /**
   * Resolves one container.
   *
   * @return the per-card demand, or {@code null} when the container asks for no device
   * @throws IllegalArgumentException when the resolved memory does not fit in 31 bits
   */
  public @Nullable CardDemand resolve(ContainerRequest request) {
    if (request.count() <= 0) {
      return null;
    }
    if (request.count() > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "container " + request.name() + ": " + schema.countResource() + " " + request.count() + " is too large");
    }
    if (request.portion() != null) {
      // A portion decides the memory per card; only the compute share takes the schema's default.
      long portionCores = request.cores() == ContainerRequest.UNSET ? schema.defaultCores() : request.cores();
      return new CardDemand((int) request.count(), 0, 0, (int) Math.min(portionCores, 100), request.portion());
    }
    long memory = 0;
    if (request.memoryMiB() != ContainerRequest.UNSET) {
      long factor = schema.effectiveMemoryFactor();
      if (request.memoryMiB() > Integer.MAX_VALUE / factor) {
        throw new IllegalArgumentException(
            "container " + request.name() + ": " + schema.memoryResource() + " " + request.memoryMiB()
                + " exceeds " + (Integer.MAX_VALUE / factor) + " MiB");
      }
      memory = request.memoryMiB() * factor;
    }
    int percent = 0;
    if (request.memoryPercent() != ContainerRequest.UNSET && request.memoryPercent() > 0) {
      percent = (int) Math.min(request.memoryPercent(), 100);
    }
    if (memory == 0 && percent == 0) {
      if (schema.defaultMemoryMiB() != 0) {
        memory = schema.defaultMemoryMiB();
      } else {
        percent = 100;
      }
    }
    if (memory > 0) {
      percent = 0;
    }
    long cores = request.cores() == ContainerRequest.UNSET ? schema.defaultCores() : request.cores();
    return new CardDemand((int) request.count(), (int) memory, percent, (int) Math.min(cores, 100));
  }
}

package io.vgpu.core.policy;

import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.api.spi.PlacementPolicyProvider;
import java.util.function.Supplier;

/** A provider that registers one policy class under its name; each policy's {@code Provider} extends it. */
abstract class NamedProvider implements PlacementPolicyProvider {
  private final String name;
  private final Supplier<PlacementPolicy> factory;

  NamedProvider(String name, Supplier<PlacementPolicy> factory) {
    this.name = name;
    this.factory = factory;
  }

  @Override
  public final String name() {
    return name;
  }

  @Override
  public final PlacementPolicy create() {
    return factory.get();
  }
}

package io.vgpu.core;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.PodRequest;
import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.PlacementPolicy;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A pod request prepared once for repeated evaluation: defaults applied, the policy resolved, and the
 * device constraints turned into fast lookups. Obtain one from {@link Engine#compile}; it may be used
 * concurrently.
 */
public final class CompiledRequest {
  final PodRequest request;
  final @Nullable CardDemand[] initDemands;
  final @Nullable CardDemand[] appDemands;
  final PlacementPolicy policy;
  final CardConstraints constraints;
  /** The single app container with devices when the request can take the scan's fast path, else -1. */
  final int fastContainer;

  CompiledRequest(PodRequest request, RequestResolver resolver, PlacementPolicy policy, boolean mutex) {
    this.request = request;
    this.initDemands = resolveAll(request.initContainers(), resolver);
    this.appDemands = resolveAll(request.containers(), resolver);
    this.policy = policy;
    this.constraints = new CardConstraints(request.constraints(), mutex);
    this.fastContainer = fastContainer();
  }

  private static @Nullable CardDemand[] resolveAll(List<ContainerRequest> containers, RequestResolver resolver) {
    @Nullable CardDemand[] out = new CardDemand[containers.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = resolver.resolve(containers.get(i));
    }
    return out;
  }

  /** Only order-independent requests qualify: NUMA binding and UUID lists depend on which cards go together. */
  private int fastContainer() {
    if (constraints.numaBind || constraints.listsUuids) {
      return -1;
    }
    for (CardDemand d : initDemands) {
      if (d != null) {
        return -1;
      }
    }
    int found = -1;
    for (int i = 0; i < appDemands.length; i++) {
      if (appDemands[i] != null) {
        if (found >= 0) {
          return -1;
        }
        found = i;
      }
    }
    return found;
  }

  /** The request this was compiled from. */
  public PodRequest request() {
    return request;
  }

  /** The policy that places this request. */
  public PlacementPolicy policy() {
    return policy;
  }

  /** Whether any container asks for a device. */
  public boolean wantsDevices() {
    for (CardDemand d : initDemands) {
      if (d != null) {
        return true;
      }
    }
    for (CardDemand d : appDemands) {
      if (d != null) {
        return true;
      }
    }
    return false;
  }

  /** The resolved per-card demand of app container {@code i}, or {@code null} if it asks for none. */
  public @Nullable CardDemand appDemand(int i) {
    return appDemands[i];
  }

  /** The resolved per-card demand of init container {@code i}, or {@code null} if it asks for none. */
  public @Nullable CardDemand initDemand(int i) {
    return initDemands[i];
  }
}

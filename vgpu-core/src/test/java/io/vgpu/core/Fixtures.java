package io.vgpu.core;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.api.spi.PlacementPolicyProvider;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/** Small builders shared by the engine's tests. */
final class Fixtures {
  static final String A100 = "NVIDIA A100-SXM4-40GB";

  private Fixtures() {}

  /**
   * A policy named {@code name} that tries cards in index order, scores every node 0 and hands what the
   * engine tells it ({@link PlacementPolicy#observe}) to {@code observer}. The engine cannot take its
   * filter fast path for it: it claims to need every placement.
   */
  static PlacementPolicyProvider inIndexOrder(String name, Consumer<CardDemand> observer) {
    return IndexOrderPolicy.provider(name, () -> new IndexOrderPolicy(name) {
      @Override
      public void observe(CardDemand demand) {
        observer.accept(demand);
      }
    });
  }

  /** An engine with HAMi's defaults and only the built-in policies. */
  static Engine engine() {
    return Engine.builder().loadPoliciesFromClassPath(false).build();
  }

  static Engine engine(String nodePolicy, String devicePolicy) {
    return Engine.builder()
        .loadPoliciesFromClassPath(false)
        .config(EngineConfig.DEFAULT.withPolicies(nodePolicy, devicePolicy))
        .build();
  }

  static String uuid(int node, int index) {
    return String.format("GPU-%08x-0000-0000-0000-0000000000%02d", node, index);
  }

  static SchedulableDevice card(String uuid, int index, int memoryMiB) {
    return new SchedulableDevice(uuid, index, A100, memoryMiB, 100, 10, 0, true, "hami-core");
  }

  /** A node of {@code count} 40960 MiB cards named {@code uuid(nodeNumber, i)}. */
  static NodeDevices node(String name, int nodeNumber, int count) {
    List<SchedulableDevice> cards = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      cards.add(card(uuid(nodeNumber, i), i, 40960));
    }
    return NodeDevices.of(name, cards);
  }

  static ContainerRequest gpu(long count, long memoryMiB, long cores) {
    return new ContainerRequest("c", count, memoryMiB, ContainerRequest.UNSET, cores);
  }

  static PodRequest pod(String name, ContainerRequest... containers) {
    List<ContainerRequest> named = new ArrayList<>();
    for (int i = 0; i < containers.length; i++) {
      ContainerRequest c = containers[i];
      named.add(new ContainerRequest(containers.length == 1 ? c.name() : "c" + i, c.count(), c.memoryMiB(), c.memoryPercent(), c.cores(), c.portion()));
    }
    return PodRequest.of(new PodRef("default", name), named);
  }

  /** Filters and reserves; returns the placement's grant or fails the test. */
  static PodGrant place(Engine engine, PodRequest request) {
    FilterResult result = engine.filter(engine.compile(request), null, false);
    Placement placement = result.placement().orElseThrow(() -> new AssertionError(request.pod() + " does not fit"));
    ReserveResult reserved = engine.reserve(placement);
    if (!reserved.reserved()) {
      throw new AssertionError("reserve failed: " + reserved.message());
    }
    return placement.grant();
  }

  /** The UUIDs of the devices of the pod's only app container. */
  static List<String> uuids(PodGrant grant) {
    return grant.containers().stream()
        .flatMap(c -> c.devices().stream())
        .map(DeviceGrant::uuid)
        .toList();
  }
}

package io.vgpu.examples;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.SharingConfig;
import io.vgpu.core.CompiledRequest;
import io.vgpu.core.DeviceRegistrar;
import io.vgpu.core.Engine;
import io.vgpu.core.Explanation;
import io.vgpu.core.FilterResult;
import io.vgpu.core.NodeDevices;
import io.vgpu.mock.GpuProfiles;
import io.vgpu.mock.MockDeviceSource;
import java.util.List;

/**
 * The engine embedded in another scheduler, without Kubernetes: register a node's GPUs, place a pod,
 * reserve it, and ask why a second pod does not fit.
 */
public final class EmbeddedEngine {
  private EmbeddedEngine() {}

  /** Places one inference pod on a two-A100 node and explains an oversized one. */
  public static void main(String[] args) {
    Engine engine = Engine.create();
    DeviceRegistrar registrar = new DeviceRegistrar("NVIDIA");
    MockDeviceSource gpus = new MockDeviceSource(GpuProfiles.get("A100-SXM4-40GB"), 2, MockDeviceSource.DEFAULT_UUID_PREFIX, 0);
    engine.upsertNode(NodeDevices.of("node-1", registrar.register(gpus.devices(), SharingConfig.DEFAULT)));

    PodRequest pod = PodRequest.of(new PodRef("default", "infer"), List.of(ContainerRequest.devices("app", 1).withMemoryMiB(4096).withCores(25)));
    CompiledRequest request = engine.compile(pod);
    FilterResult result = engine.filter(request, null, true);
    result.placement().ifPresent(p -> {
      engine.reserve(p);
      System.out.println("infer -> " + p.node() + " " + p.grant().containers().get(0).devices());
    });

    PodRequest big = PodRequest.of(new PodRef("default", "train"), List.of(ContainerRequest.devices("app", 2).withMemoryMiB(40000)));
    Explanation why = engine.explain(engine.compile(big), null);
    why.nearest().ifPresent(fix -> System.out.println("train does not fit; nearest: " + fix.node() + ": " + fix.change()));
  }
}

package io.vgpu.bench;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.codec.DeviceListCodec;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * The allocation annotation ({@code hami.io/vgpu-devices-allocated}) written after each placement and
 * read back for every pod when the scheduler rebuilds its ledger: a pod with an init container without
 * GPU, an app container with two cards and a sidecar sharing one of them.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Benchmark)
public class AnnotationCodecBenchmark {
  private static final String A = "GPU-8a6f3c1e-52b9-4d1c-9a0f-0123456789ab";
  private static final String B = "GPU-3c2d1b0a-9f8e-4d7c-8b6a-fedcba987654";

  private final PodGrant grant =
      new PodGrant(
          new PodRef("team-a", "trainer-7f9c"),
          "node-00042",
          List.of(ContainerGrant.empty("init")),
          List.of(
              new ContainerGrant("main", List.of(new DeviceGrant(A, "NVIDIA", 20_480, 50), new DeviceGrant(B, "NVIDIA", 20_480, 50))),
              new ContainerGrant("sidecar", List.of(new DeviceGrant(A, "NVIDIA", 2_048, 10)))));

  private final String annotation = DeviceListCodec.encode(grant);
  private final List<String> initNames = List.of("init");
  private final List<String> appNames = List.of("main", "sidecar");

  @Benchmark
  public String encode() {
    return DeviceListCodec.encode(grant);
  }

  @Benchmark
  public PodGrant decode() {
    return DeviceListCodec.decodeGrant(grant.pod(), grant.node(), annotation, initNames, appNames);
  }
}

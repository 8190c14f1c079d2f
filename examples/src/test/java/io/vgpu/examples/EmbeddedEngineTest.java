package io.vgpu.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class EmbeddedEngineTest {
  @Test
  void placesAndExplains() {
    PrintStream original = System.out;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    try {
      EmbeddedEngine.main(new String[0]);
    } finally {
      System.setOut(original);
    }
    String printed = out.toString(StandardCharsets.UTF_8);
    assertThat(printed).contains("infer -> node-1 [DeviceGrant[uuid=GPU-12345678-1234-1234-1234-123456780000, vendor=NVIDIA, memoryMiB=4096, cores=25]]");
    // card 0 holds 4096 MiB, so a 40000 MiB share needs 3136 MiB freed there; card 1 is free.
    assertThat(printed).contains("train does not fit; nearest: node-1: free 3136 MiB on GPU-12345678-1234-1234-1234-123456780000 (held by default/infer)");
  }
}

package io.vgpu.core;

import static io.vgpu.core.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SmokeTest {
  @Test
  void placesOnePod() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    var grant = place(e, pod("p1", gpu(1, 4096, 25)));
    assertThat(grant.node()).isEqualTo("n1");
    assertThat(uuids(grant)).containsExactly(uuid(0, 0));
    assertThat(e.usage("n1").orElseThrow().devices().get(0).usedMemoryMiB()).isEqualTo(4096);
  }
}

#include "nbody.h"

#include <cmath>
#include <cstring>

namespace engine {
namespace {

constexpr double kGravity = 1.0;
constexpr double kSoftening2 = 0.05;
constexpr double kFixedPointScale = 16777216.0;  // 2^24
// Average kinetic energy per body the thermostat allows, and the farthest a body may
// drift in one step.
constexpr double kMaxEnergyPerBody = 0.5;
constexpr double kMaxDrift = 0.0015;

// SplitMix64: a portable generator, so that every platform starts from the same bodies.
uint64_t NextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A uniform double in [-1, 1) from the top 53 bits.
double UniformSigned(uint64_t& state) {
  return static_cast<double>(NextRandom(state) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

}  // namespace

World MakeWorld(int32_t num_bodies, uint64_t seed) {
  World world;
  world.num_bodies = num_bodies;
  world.position.resize(2 * static_cast<size_t>(num_bodies));
  world.velocity.resize(2 * static_cast<size_t>(num_bodies));
  uint64_t state = seed;
  for (int32_t i = 0; i < num_bodies; ++i) {
    double x, y;
    do {
      x = UniformSigned(state);
      y = UniformSigned(state);
    } while (x * x + y * y > 1.0);
    world.position[2 * i] = x;
    world.position[2 * i + 1] = y;
    world.velocity[2 * i] = -0.3 * y + 0.05 * UniformSigned(state);
    world.velocity[2 * i + 1] = 0.3 * x + 0.05 * UniformSigned(state);
  }
  return world;
}

void Kick(const std::vector<double>& position, int32_t begin, int32_t end, double dt,
          std::vector<double>& velocity) {
  const int32_t n = static_cast<int32_t>(position.size() / 2);
  const double mass = 1.0 / n;
  for (int32_t i = begin; i < end; ++i) {
    const double xi = position[2 * i];
    const double yi = position[2 * i + 1];
    double ax = 0.0;
    double ay = 0.0;
    for (int32_t j = 0; j < n; ++j) {
      const double dx = position[2 * j] - xi;
      const double dy = position[2 * j + 1] - yi;
      const double r2 = dx * dx + dy * dy + kSoftening2;
      const double inv_r3 = 1.0 / (r2 * std::sqrt(r2));
      ax += dx * inv_r3;
      ay += dy * inv_r3;
    }
    velocity[2 * i] += kGravity * mass * ax * dt;
    velocity[2 * i + 1] += kGravity * mass * ay * dt;
  }
}

int64_t KineticEnergyFixed(const std::vector<double>& velocity, int32_t begin, int32_t end) {
  int64_t total = 0;
  for (int32_t i = begin; i < end; ++i) {
    const double vx = velocity[2 * i];
    const double vy = velocity[2 * i + 1];
    total += static_cast<int64_t>(0.5 * (vx * vx + vy * vy) * kFixedPointScale);
  }
  return total;
}

double MaxSpeedSquared(const std::vector<double>& velocity, int32_t begin, int32_t end) {
  double largest = 0.0;
  for (int32_t i = begin; i < end; ++i) {
    const double vx = velocity[2 * i];
    const double vy = velocity[2 * i + 1];
    const double s = vx * vx + vy * vy;
    if (s > largest) largest = s;
  }
  return largest;
}

Controls ComputeControls(int64_t total_kinetic_energy_fixed, double max_speed_squared, int32_t num_bodies,
                         double dt) {
  Controls c{1.0, dt};
  const double energy = static_cast<double>(total_kinetic_energy_fixed) / kFixedPointScale;
  const double bound = kMaxEnergyPerBody * num_bodies;
  if (energy > bound) c.velocity_scale = std::sqrt(bound / energy);
  const double speed = std::sqrt(max_speed_squared) * c.velocity_scale;
  if (speed * dt > kMaxDrift) c.drift_dt = kMaxDrift / speed;
  return c;
}

void Drift(const Controls& controls, int32_t begin, int32_t end, std::vector<double>& velocity,
           std::vector<double>& position) {
  for (int32_t i = begin; i < end; ++i) {
    velocity[2 * i] *= controls.velocity_scale;
    velocity[2 * i + 1] *= controls.velocity_scale;
    position[2 * i] += velocity[2 * i] * controls.drift_dt;
    position[2 * i + 1] += velocity[2 * i + 1] * controls.drift_dt;
  }
}

uint64_t StateHash(const World& world) {
  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&hash](const std::vector<double>& values) {
    for (double v : values) {
      unsigned char bytes[sizeof(double)];
      std::memcpy(bytes, &v, sizeof(double));
      for (unsigned char b : bytes) {
        hash ^= b;
        hash *= 0x100000001b3ull;
      }
    }
  };
  mix(world.position);
  mix(world.velocity);
  return hash;
}

}  // namespace engine

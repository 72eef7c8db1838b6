"""urbex as Gymnasium environments (:mod:`urbex.gym.grounding`: ``urbex/Grounding-v0``).

``import urbex`` registers them (:mod:`urbex.registration`) without importing this package.
"""

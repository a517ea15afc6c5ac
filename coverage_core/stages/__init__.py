"""The analysis stages, in the order the session runs them: chunking, calibration, clustering, topics, screening."""

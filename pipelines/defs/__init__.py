"""Assets by stage, checks, resources, jobs and schedules."""
